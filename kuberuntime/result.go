package kuberuntime

import (
	"errors"
	"fmt"
	"strings"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
)

// SyncAction names a step of SyncPod or KillPod.
type SyncAction string

// Sync actions (kubecontainer.SyncAction).
const (
	ActionStartContainer   SyncAction = "StartContainer"
	ActionKillContainer    SyncAction = "KillContainer"
	ActionCreatePodSandbox SyncAction = "CreatePodSandbox"
	ActionKillPodSandbox   SyncAction = "KillPodSandbox"
	ActionInitContainer    SyncAction = "InitContainer"
	// ActionResizePodInPlace resizes a running container (its Target).
	ActionResizePodInPlace SyncAction = "ResizePodInPlace"
)

// Errors a sync step can fail with; the Reason of a SyncStep is the
// kubelet's waiting reason shown in the container status.
var (
	ErrCrashLoopBackOff    = errors.New("CrashLoopBackOff")
	ErrImagePullBackOff    = errors.New("ImagePullBackOff")
	ErrImagePull           = errors.New("ErrImagePull")
	ErrImageNeverPull      = errors.New("ErrImageNeverPull")
	ErrImageInspect        = errors.New("ImageInspectError")
	ErrCreateConfig        = errors.New("CreateContainerConfigError")
	ErrCreateContainer     = errors.New("CreateContainerError")
	ErrRunContainer        = errors.New("RunContainerError")
	ErrPostStartHook       = errors.New("PostStartHookError")
	ErrKillContainer       = errors.New("KillContainerError")
	ErrCreatePodSandbox    = errors.New("CreatePodSandboxError")
	ErrConfigPodSandbox    = errors.New("ConfigPodSandboxError")
	ErrKillPodSandbox      = errors.New("KillPodSandboxError")
	ErrResizePodInPlace    = errors.New("ResizePodInPlaceError")
	ErrPodSandboxStatus    = errors.New("PodSandboxStatusError")
	errRemovePodComponents = errors.New("RemovePodError")
)

// SyncStep is the outcome of one step.
type SyncStep struct {
	Action SyncAction
	// Target is the container name (or the pod for sandbox steps).
	Target string
	// Err is nil on success; errors.Is(Err, ErrCrashLoopBackOff) etc. tell the kind.
	Err error
	// Message is the human-readable detail.
	Message string
}

// Reason is the kubelet's waiting reason for a failed step ("" on success).
func (s SyncStep) Reason() string {
	if s.Err == nil {
		return ""
	}
	var se *stepError
	if errors.As(s.Err, &se) {
		return se.kind.Error()
	}
	return s.Err.Error()
}

// stepError is a step's failure: its kind (the waiting reason) and its
// cause, both reachable with errors.Is and errors.As, so a caller can tell
// ErrCreatePodSandbox and, under it, ErrUnavailable.
type stepError struct {
	kind  error
	cause error
}

func (e *stepError) Error() string   { return e.kind.Error() + ": " + e.cause.Error() }
func (e *stepError) Unwrap() []error { return []error{e.kind, e.cause} }

// fail builds a step error; format wraps the cause with %w.
func fail(kind error, format string, args ...any) error {
	return &stepError{kind: kind, cause: fmt.Errorf(format, args...)}
}

// SyncResult collects the steps of a SyncPod or KillPod.
type SyncResult struct {
	Steps []SyncStep
}

func (r *SyncResult) add(action SyncAction, target string, err error) {
	step := SyncStep{Action: action, Target: target, Err: err}
	if err != nil {
		step.Message = err.Error()
	}
	r.Steps = append(r.Steps, step)
}

// Err joins the failed steps' errors (nil when all succeeded). A container
// in back-off is a failed step: the caller retries it on a later sync.
func (r *SyncResult) Err() error {
	var errs []error
	for _, s := range r.Steps {
		if s.Err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", s.Action, s.Target, s.Err))
		}
	}
	return errors.Join(errs...)
}

// StartResults lists the sync's tries to start a container, init
// containers included, as the kubelet's reason cache reads them: a failed
// try gives the container's waiting reason until one succeeds.
func (r *SyncResult) StartResults() []kc.StartResult {
	var out []kc.StartResult
	for _, s := range r.Steps {
		if s.Action == ActionStartContainer || s.Action == ActionInitContainer {
			out = append(out, kc.StartResult{Container: s.Target, Reason: s.Reason(), Message: s.Message})
		}
	}
	return out
}

// String summarises the steps, for logs.
func (r *SyncResult) String() string {
	parts := make([]string, 0, len(r.Steps))
	for _, s := range r.Steps {
		if s.Err != nil {
			parts = append(parts, fmt.Sprintf("%s %s: %v", s.Action, s.Target, s.Err))
		} else {
			parts = append(parts, fmt.Sprintf("%s %s: ok", s.Action, s.Target))
		}
	}
	return strings.Join(parts, "; ")
}

// within puts a prefix before a step error's cause, keeping its kind (a
// plain error is wrapped as it is).
func within(err error, format string, args ...any) error {
	var se *stepError
	if !errors.As(err, &se) {
		return fmt.Errorf(format+": %w", append(args, err)...)
	}
	return &stepError{kind: se.kind, cause: fmt.Errorf(format+": %w", append(args, se.cause)...)}
}

// kindOf is a step error's kind (nil for another error).
func kindOf(err error) error {
	var se *stepError
	if errors.As(err, &se) {
		return se.kind
	}
	return nil
}
