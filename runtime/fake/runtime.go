package fake

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

// Runtime is an in-memory CRI v1 runtime. It implements both
// runtimeapi.RuntimeServiceServer and runtimeapi.ImageServiceServer, so it
// can be called directly or registered on a gRPC server.
//
// It behaves as containerd 1.6's CRI plugin; for example:
//
//   - IDs are 64 hex digits and every call taking an ID also takes a
//     unique prefix of one.
//   - Names are reserved as containerd does (name_namespace_uid_attempt
//     for sandboxes); a duplicate fails with "... is reserved for ...".
//   - RemoveContainer, RemovePodSandbox and RemoveImage succeed for
//     unknown objects; StopContainer, StopPodSandbox, ContainerStatus and
//     PodSandboxStatus answer codes.NotFound; ImageStatus of an absent
//     image answers no image and no error.
//   - A failed StartContainer leaves the container EXITED with code 128
//     and reason "StartError"; SIGKILL is exit code 137, reason "Error".
//   - ListImages ignores its filter, as containerd 1.6 does.
//
// Sandboxes, containers and images are kept as immutable protobuf
// snapshots, replaced on every change, so List and Status calls share them
// without copying (that is what makes listing thousands of containers
// cheap): messages returned by its methods must be treated as read-only.
type Runtime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer

	clock     clock.WithTicker
	hostPorts bool
	pullAny   bool // any image pulls (WithAnyImagePullable)
	compact   bool // WithCompactConfigs
	podIP     func(n int) string
	version   *runtimeapi.VersionResponse
	handlers  map[string]bool
	imageFs   string // mountpoint of images and writable layers

	calls  [numMethods]atomic.Int64
	faults faults

	// mu guards st. Lock order: clock (a fake clock runs timer callbacks
	// with its own lock held) before mu, so nothing may call the clock, or
	// stop a timer, while holding mu.
	mu sync.RWMutex
	st state

	// Unfiltered list responses, rebuilt lazily after a change; nil means
	// stale. Readers build them under mu.RLock, writers reset them under
	// mu.Lock, so a stored list is never older than the state.
	sandboxList   atomic.Pointer[[]*runtimeapi.PodSandbox]
	containerList atomic.Pointer[[]*runtimeapi.Container]
	imageList     atomic.Pointer[[]*runtimeapi.Image]

	// The streaming server, started by the first Exec, Attach or
	// PortForward and stopped by Close.
	streamMu     sync.Mutex
	stream       *streamServer
	streamClosed bool

	done      chan struct{} // closed by Close
	closeOnce sync.Once
	bgMu      sync.Mutex // guards bgClosed and wg.Add against Close's wg.Wait
	bgClosed  bool
	wg        sync.WaitGroup
}

// state is everything guarded by Runtime.mu.
type state struct {
	sandboxes      map[string]*sandbox
	sandboxOrder   []*sandbox
	sandboxNames   map[string]string // reserved name -> sandbox ID
	containers     map[string]*container
	containerOrder []*container
	containerNames map[string]string // reserved name -> container ID
	// Indexes by the kubelet's pod UID label, which every kubelet filter
	// uses: a pod's status read touches its own objects, not all of them.
	sandboxesByUID  map[string][]*sandbox
	containersByUID map[string][]*container

	images    map[string]*image // by ID
	imageRefs map[string]*image // by normalized reference
	behaviors map[string]Behavior
	pulls     map[string]pullRule // by normalized reference
	imageFs   *runtimeapi.ImageFsInfoResponse

	podSeq     int
	conditions []*runtimeapi.RuntimeCondition
	status     *runtimeapi.StatusResponse
	podCIDR    string

	subs    map[*subscriber]struct{}
	dropped int64
	closed  bool
}

// RuntimeName is the fake's name in its Version answer (by default).
const RuntimeName = "nodekit-fake"

// New returns a Runtime configured by opts. Call Close when done with it.
// It panics if an option names an invalid image reference.
func New(opts ...Option) *Runtime {
	o := options{
		clock:    clock.RealClock{},
		podIPs:   loopbackPodIP,
		name:     RuntimeName,
		version:  "0.1.0",
		handlers: []string{"runc"},
		// A path that exists wherever the fake runs: statfs of it must
		// work (#28), and a directory of its own would cost hollow nodes.
		imageFs: os.TempDir(),
		behaviors: map[string]Behavior{
			TestbinImage:   TestbinBehavior,
			RemovableImage: TestbinBehavior,
			PauseImage:     DefaultBehavior,
		},
	}
	for _, opt := range opts {
		opt(&o)
	}
	r := &Runtime{
		clock:     o.clock,
		hostPorts: o.hostPorts,
		pullAny:   o.pullAny,
		compact:   o.compact,
		podIP:     o.podIPs,
		imageFs:   o.imageFs,
		version: &runtimeapi.VersionResponse{
			Version:           "0.1.0",
			RuntimeName:       o.name,
			RuntimeVersion:    o.version,
			RuntimeApiVersion: "v1",
		},
		handlers: map[string]bool{"": true},
		done:     make(chan struct{}),
		st: state{
			sandboxes:       map[string]*sandbox{},
			sandboxNames:    map[string]string{},
			containers:      map[string]*container{},
			containerNames:  map[string]string{},
			sandboxesByUID:  map[string][]*sandbox{},
			containersByUID: map[string][]*container{},
			images:          map[string]*image{},
			imageRefs:       map[string]*image{},
			behaviors:       map[string]Behavior{},
			pulls:           map[string]pullRule{},
			subs:            map[*subscriber]struct{}{},
			conditions: []*runtimeapi.RuntimeCondition{
				{Type: runtimeapi.RuntimeReady, Status: true},
				{Type: runtimeapi.NetworkReady, Status: true},
			},
		},
	}
	for _, h := range o.handlers {
		r.handlers[h] = true
	}
	r.st.status = &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: r.st.conditions}}
	// New cannot return errors, and a misspelt reference in a test's
	// options is a bug best reported at once, like regexp.MustCompile.
	for ref, b := range o.behaviors {
		n, err := normalizeRef(ref)
		if err != nil {
			panic(fmt.Sprintf("fake: WithBehavior: image %q: %v", ref, err))
		}
		r.st.behaviors[imageIDFor(n)] = b
	}
	for _, ref := range o.images {
		if err := r.addImageLocked(ref); err != nil {
			panic("fake: WithImages: " + err.Error())
		}
	}
	return r
}

// Close stops all timers and host-port servers, ends event streams and
// streaming sessions (exec, attach, port-forward) and waits for the
// goroutines the Runtime started. Later calls return codes.Unavailable.
// Close is idempotent. A streaming client still opening its streams holds
// Close up to the streaming server's 30s stream creation timeout.
func (r *Runtime) Close() error {
	r.closeOnce.Do(func() {
		r.mu.Lock()
		r.st.closed = true
		var fx effects
		for _, c := range r.st.containerOrder {
			fx.stopTimer(c.takeTimer())
			fx.add(c.takeCleanup())
		}
		close(r.done)
		r.mu.Unlock()
		fx.run()
		r.stopStreams()

		r.bgMu.Lock()
		r.bgClosed = true
		r.bgMu.Unlock()
		r.wg.Wait()
	})
	return nil
}

// goBackground runs f in a goroutine that Close waits for. It reports
// false, without running f, once Close has begun.
func (r *Runtime) goBackground(f func()) bool {
	r.bgMu.Lock()
	defer r.bgMu.Unlock()
	if r.bgClosed {
		return false
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		f()
	}()
	return true
}

// track counts the calling goroutine (a streaming session, started by the
// streaming server's code) among those Close waits for, until untrack is
// called. It reports false once Close has begun.
func (r *Runtime) track() (untrack func(), ok bool) {
	r.bgMu.Lock()
	defer r.bgMu.Unlock()
	if r.bgClosed {
		return nil, false
	}
	r.wg.Add(1)
	return r.wg.Done, true
}

// stopper is the part of clock.Timer the Runtime needs.
type stopper interface{ Stop() bool }

// afterFunc calls f after d on the injected clock. Clocks without AfterFunc
// get a goroutine waiting on a timer instead. Must not be called with mu held.
func (r *Runtime) afterFunc(d time.Duration, f func()) stopper {
	if c, ok := r.clock.(clock.WithDelayedExecution); ok {
		return c.AfterFunc(d, f)
	}
	t := r.clock.NewTimer(d)
	g := &goTimer{t: t, stop: make(chan struct{})}
	r.goBackground(func() {
		select {
		case <-t.C():
			f()
		case <-g.stop:
		case <-r.done:
		}
	})
	return g
}

type goTimer struct {
	t    clock.Timer
	stop chan struct{}
	once sync.Once
}

func (g *goTimer) Stop() bool {
	active := g.t.Stop()
	g.once.Do(func() { close(g.stop) })
	return active
}

// sleep waits d on the injected clock, or until ctx ends or the Runtime is
// closed. Must not be called with mu held.
func (r *Runtime) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := r.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	case <-r.done:
		return errClosed
	}
}

// waitForever blocks until ctx ends or the Runtime is closed.
func (r *Runtime) waitForever(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	case <-r.done:
		return errClosed
	}
}

var errClosed = status.Error(codes.Unavailable, "fake runtime is closed")

// effects collects work that must run after mu is released: stopping
// timers takes the clock's lock, and cleanups are user code.
type effects struct{ fns []func() }

func (e *effects) add(f func()) {
	if f != nil {
		e.fns = append(e.fns, f)
	}
}

func (e *effects) stopTimer(t stopper) {
	if t != nil {
		e.fns = append(e.fns, func() { t.Stop() })
	}
}

func (e *effects) run() {
	for _, f := range e.fns {
		f()
	}
	e.fns = nil
}

// newID returns 64 random hex digits, like containerd's IDs.
func newID() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("fake: crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// nanos converts a clock reading to CRI's UnixNano timestamps.
func nanos(t time.Time) int64 { return t.UnixNano() }
