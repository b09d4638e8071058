package probe

import "time"

// Result is the outcome of one probe, as the kubelet's pkg/probe.Result.
type Result string

const (
	// Success: the target is healthy.
	Success Result = "success"
	// Warning: the target answered but the answer is not conclusive (an
	// HTTP redirect that was not followed); the kubelet counts it as
	// Success and logs the message.
	Warning Result = "warning"
	// Failure: the target is unhealthy or could not be reached.
	Failure Result = "failure"
	// Unknown: the probe itself could not run (e.g. exec through a runtime
	// that errored); callers retry and otherwise ignore it.
	Unknown Result = "unknown"
)

const (
	// DefaultUserAgent is what the kubelet 1.37 sends as "kube-probe/<major>.<minor>".
	DefaultUserAgent = "kube-probe/1.37"

	// DefaultTimeout replaces a zero or negative timeout: the API server's
	// default for timeoutSeconds, so a probe can never wait forever.
	DefaultTimeout = time.Second

	// maxOutput is how much of an HTTP body or exec output becomes the
	// message: the kubelet's 10 KiB.
	maxOutput = 10 << 10
)

func orDefault(timeout time.Duration) time.Duration {
	if timeout <= 0 {
		return DefaultTimeout
	}
	return timeout
}
