package runtime

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Sentinel errors for errors.Is. Every error a Client returns for a failed
// CRI call is an *Error that matches the sentinel of its gRPC code.
var (
	ErrNotFound         = errors.New("not found")
	ErrAlreadyExists    = errors.New("already exists")
	ErrUnavailable      = errors.New("runtime unavailable")
	ErrDeadlineExceeded = errors.New("deadline exceeded")
	ErrUnimplemented    = errors.New("not implemented by the runtime")
	ErrInvalidArgument  = errors.New("invalid argument")
)

var sentinelCodes = map[error]codes.Code{
	ErrNotFound:         codes.NotFound,
	ErrAlreadyExists:    codes.AlreadyExists,
	ErrUnavailable:      codes.Unavailable,
	ErrDeadlineExceeded: codes.DeadlineExceeded,
	ErrUnimplemented:    codes.Unimplemented,
	ErrInvalidArgument:  codes.InvalidArgument,
	context.Canceled:    codes.Canceled,
	// A call cut off by its own deadline is also a context.DeadlineExceeded.
	context.DeadlineExceeded: codes.DeadlineExceeded,
}

// Error is a failed CRI call: the operation (the kubelet's operation_type
// name, e.g. "stop_container"), the gRPC code and the runtime's message.
type Error struct {
	Op      string
	Code    codes.Code
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("cri %s: %s: %s", e.Op, e.Code, e.Message)
}

// Is matches the sentinel errors above by gRPC code.
func (e *Error) Is(target error) bool {
	c, ok := sentinelCodes[target]
	return ok && c == e.Code
}

// GRPCStatus keeps status.FromError and status.Code working on wrapped errors.
func (e *Error) GRPCStatus() *status.Status { return status.New(e.Code, e.Message) }

// wrapError turns a gRPC error into an *Error; nil stays nil.
func wrapError(op string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	s, _ := status.FromError(err)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Op: op, Code: codes.DeadlineExceeded, Message: s.Message()}
	case errors.Is(err, context.Canceled):
		return &Error{Op: op, Code: codes.Canceled, Message: s.Message()}
	}
	return &Error{Op: op, Code: s.Code(), Message: s.Message()}
}

// ignoreNotFound is applied to stop and remove calls: the object being gone
// already is what the caller wanted.
func ignoreNotFound(err error) error {
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}
