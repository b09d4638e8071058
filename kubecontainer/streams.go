package kubecontainer

import "errors"

// StreamOptions are the streams of an interactive session (kubectl exec
// -i/-t, attach): which of stdin, stdout and stderr it carries, and
// whether it is a terminal (which merges stderr into stdout).
type StreamOptions struct {
	Stdin, Stdout, Stderr, TTY bool
}

// Sentinel errors for a session's target, matched with errors.Is; the
// node API answers them with 404.
var (
	ErrPodNotFound       = errors.New("pod not found")
	ErrContainerNotFound = errors.New("container not found")
)
