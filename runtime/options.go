package runtime

import "time"

// Kubelet defaults.
const (
	// DefaultRuntimeEndpoint is the kubelet's --container-runtime-endpoint default.
	DefaultRuntimeEndpoint = "unix:///run/containerd/containerd.sock"
	// DefaultRequestTimeout is the kubelet's --runtime-request-timeout default.
	DefaultRequestTimeout = 2 * time.Minute
	// DefaultImagePullTimeout bounds a pull; the kubelet leaves pulls unbounded
	// and relies on progress reports, which a thin client does not get.
	DefaultImagePullTimeout = 10 * time.Minute
	// DefaultMaxMsgSize is the kubelet's CRI message size limit (16 MiB).
	DefaultMaxMsgSize = 16 << 20
	// DefaultReconnectMaxDelay caps gRPC's reconnect backoff so a restarted
	// runtime is picked up within seconds rather than gRPC's default 2 minutes.
	DefaultReconnectMaxDelay = 3 * time.Second
)

type options struct {
	imageEndpoint     string
	timeout           time.Duration
	pullTimeout       time.Duration
	metrics           *Metrics
	waitForReady      bool
	reconnectMaxDelay time.Duration
	skipVersionCheck  bool
	sharedLists       bool
}

// Option configures Dial.
type Option func(*options)

// WithImageEndpoint serves images from another endpoint (the kubelet's
// --image-service-endpoint); by default the runtime endpoint serves both.
func WithImageEndpoint(endpoint string) Option {
	return func(o *options) { o.imageEndpoint = endpoint }
}

// WithTimeout sets the per-call timeout applied when the caller's context has
// no earlier deadline (default 2m).
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithImagePullTimeout sets the timeout for PullImage (default 10m).
func WithImagePullTimeout(d time.Duration) Option { return func(o *options) { o.pullTimeout = d } }

// WithMetrics records every call in m (register m with your registry).
func WithMetrics(m *Metrics) Option { return func(o *options) { o.metrics = m } }

// WithWaitForReady makes calls wait, up to their timeout, for a runtime that
// is down to come back instead of failing at once with ErrUnavailable.
func WithWaitForReady(wait bool) Option { return func(o *options) { o.waitForReady = wait } }

// WithReconnectMaxDelay caps the backoff between reconnect attempts (default 3s).
func WithReconnectMaxDelay(d time.Duration) Option {
	return func(o *options) { o.reconnectMaxDelay = d }
}

// WithoutVersionCheck skips the CRI v1 check in Dial, for runtimes that are
// not up yet when the agent starts; the first call then connects lazily.
func WithoutVersionCheck() Option { return func(o *options) { o.skipVersionCheck = true } }

// WithSharedListResponses is for NewInProcessClient: the items of list
// responses (ListPodSandbox, ListContainers, ListImages and the stats
// listings) reach the caller as the server returned them, in slices of
// their own, rather than deep-copied. Other responses are still copied.
// Only for a server that never modifies what it has returned, as
// runtime/fake, which rebuilds its snapshots rather than changing them;
// the Client and Manager never modify a listed item. A relist then costs
// no copy of every container: most of an in-process agent's CPU otherwise.
func WithSharedListResponses() Option { return func(o *options) { o.sharedLists = true } }
