package fake

import (
	"fmt"

	"k8s.io/utils/clock"
)

// Images the project's integration tests use; the fake knows how they
// behave (see TestbinBehavior).
const (
	// PauseImage is the sandbox image. It runs until stopped.
	PauseImage = "nodekit.local/pause:1"
	// TestbinImage is the multi-mode test workload (hack/tools/testbin).
	TestbinImage = "nodekit.local/testbin:1"
	// RemovableImage is the testbin binary under a second image ID, for
	// tests that remove an image.
	RemovableImage = "nodekit.local/removable:1"
)

// Option configures a Runtime.
type Option func(*options)

type options struct {
	clock     clock.WithTicker
	images    []string
	behaviors map[string]Behavior
	podIPs    func(n int) string
	hostPorts bool
	pullAny   bool
	compact   bool
	name      string
	version   string
	handlers  []string
	imageFs   string
}

// WithClock sets the clock for every timestamp and delay (scripted exits,
// stop grace periods, exec timeouts, latencies, pull delays). Tests pass a
// k8s.io/utils/clock/testing.FakeClock and Step it, and never sleep. A
// clock that also has AfterFunc (both RealClock and FakeClock do) fires
// scripted exits synchronously inside Step, so a test sees the exit as soon
// as Step returns; a call waiting on the clock has registered its timer
// once the clock has a new waiter.
func WithClock(c clock.WithTicker) Option {
	return func(o *options) { o.clock = c }
}

// WithImages preloads images, as if pulled before the test began.
func WithImages(refs ...string) Option {
	return func(o *options) { o.images = append(o.images, refs...) }
}

// WithBehavior sets what containers of imageRef do. It replaces the
// built-in behaviour of the project's images if given for one of them.
func WithBehavior(imageRef string, b Behavior) Option {
	return func(o *options) { o.behaviors[imageRef] = b }
}

// WithPodIPs sets the IP of the n-th sandbox (n from 1) that does not use
// the node's network. The default hands out distinct loopback addresses
// 127.1.x.y: tests may dial pod IPs and only loopback traffic is allowed
// where they run, so never return a private or public address here. f is
// called with the Runtime locked, so it must not call the Runtime.
func WithPodIPs(f func(n int) string) Option {
	return func(o *options) { o.podIPs = f }
}

// WithHostPorts makes testbin's serve and grpc modes really listen, on
// 127.0.0.1:$PORT in a host-network sandbox and on the pod IP (when it is
// a loopback address) otherwise, as the real binary would. Off by default
// so that unit tests need no free ports.
func WithHostPorts(on bool) Option {
	return func(o *options) { o.hostPorts = on }
}

// WithAnyImagePullable makes PullImage succeed at once for any image
// without a rule of its own (SetPullBehavior), as a registry that has
// every image would: what a hollow node's runtime needs. Off by default, so
// that a test names the images it may pull.
func WithAnyImagePullable() Option {
	return func(o *options) { o.pullAny = true }
}

// WithCompactConfigs makes the fake keep, of each container's config, only
// what its statuses, listings and attach read (metadata, image, labels,
// annotations, mounts, log path, stdin and tty), dropping env, command and
// Linux settings once the container is created and its Behavior has seen
// them; of each sandbox's, its metadata, labels, annotations and namespace
// options. Verbose statuses then show only that part as "config".
// For many fakes in one process (hollow nodes), where the rest would be
// most of a container's memory. Off by default: a test may read the full
// config the runtime got.
func WithCompactConfigs() Option {
	return func(o *options) { o.compact = true }
}

// WithRuntimeName sets VersionResponse.RuntimeName ("nodekit-fake").
func WithRuntimeName(name string) Option {
	return func(o *options) { o.name = name }
}

// WithRuntimeVersion sets VersionResponse.RuntimeVersion ("0.1.0").
func WithRuntimeVersion(v string) Option {
	return func(o *options) { o.version = v }
}

// WithRuntimeHandlers sets the runtime handlers RunPodSandbox accepts
// besides the default "" (default: "runc", like containerd's stock config).
func WithRuntimeHandlers(names ...string) Option {
	return func(o *options) { o.handlers = append([]string(nil), names...) }
}

// WithImageFsMountpoint sets the mountpoint ImageFsInfo and containers'
// writable layers report (default os.TempDir()). Consumers statfs it for
// capacity, as the kubelet's image GC does, so it should exist on this
// machine; the fake writes nothing there. "" reports none.
func WithImageFsMountpoint(path string) Option {
	return func(o *options) { o.imageFs = path }
}

// loopbackPodIP maps n (from 1) to 127.a.b.c with a from 1, skipping host
// parts 0 and 255 so that every address looks like an ordinary host.
func loopbackPodIP(n int) string {
	i := n - 1
	c := i%254 + 1
	i /= 254
	b := i % 256
	a := 1 + i/256
	return fmt.Sprintf("127.%d.%d.%d", a, b, c)
}
