package probe

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Execer runs a command in a container and waits for it; the CRI client
// implements it with ExecSync. A command that ran and exited non-zero is
// reported as an error with an ExitStatus() int method; a command cut off
// at its timeout as an error with gRPC code DeadlineExceeded (or
// context.DeadlineExceeded).
type Execer interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, err error)
}

// exitStatuser is the kubelet's exec.ExitError, as CRI clients return it.
type exitStatuser interface {
	ExitStatus() int
}

// Exec is the kubelet's exec probe: cmd exiting 0 is Success, non-zero is
// Failure, both with stdout and stderr (at most 10 KiB) as message; a
// command outliving timeout (<= 0 means DefaultTimeout) is Failure
// "command ... timed out"; any other error means the probe could not run:
// Unknown with the error.
func Exec(ctx context.Context, e Execer, containerID string, cmd []string, timeout time.Duration) (Result, string, error) {
	stdout, stderr, err := e.ExecSync(ctx, containerID, cmd, orDefault(timeout))
	if err != nil {
		var exit exitStatuser
		switch {
		case errors.As(err, &exit):
			if exit.ExitStatus() == 0 {
				return Success, output(stdout, stderr), nil
			}
			return Failure, output(stdout, stderr), nil
		case status.Code(err) == codes.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded):
			// The kubelet's message: the output of a killed command is lost.
			return Failure, "command " + strconv.Quote(strings.Join(cmd, " ")) + " timed out", nil
		}
		return Unknown, "", err
	}
	return Success, output(stdout, stderr), nil
}

// output is stdout followed by stderr, cut at 10 KiB, as the kubelet's
// combined output.
func output(stdout, stderr []byte) string {
	if len(stdout) >= maxOutput {
		return string(stdout[:maxOutput])
	}
	if len(stderr) > maxOutput-len(stdout) {
		stderr = stderr[:maxOutput-len(stdout)]
	}
	return string(stdout) + string(stderr)
}
