package hollow

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/nodekit-dev/nodekit/nodeagent"
)

// The defaults of a hollow node's capacity.
const (
	DefaultNamePrefix = "hollow-node-"
	DefaultCPU        = 4
	DefaultMemory     = 16 << 30
	DefaultMaxPods    = nodeagent.DefaultMaxPods
	// DefaultQPS and DefaultBurst are the kubelet's --kube-api-qps and
	// --kube-api-burst, per node.
	DefaultQPS   = 50
	DefaultBurst = 100
	// DefaultEventCacheSize is each node's event correlator cache (the
	// kubelet's, client-go's, is 4096 per cache): room for a node's
	// recently noisy objects, at a fraction of the memory.
	DefaultEventCacheSize = 32
	// GCPercent is the GOGC a process of hollow nodes runs best with
	// (examples/hollownodes sets it): nearly all of its heap is the nodes'
	// long-lived state, so collecting at 25% growth rather than Go's 100%
	// keeps the resident set near the live heap, for a little more of the
	// CPU the nodes hardly use.
	GCPercent = 25
)

// Config describes a set of hollow nodes. Zero fields get the defaults.
//
// What a hundred nodes cost is measured by BenchmarkHollowNodes100x110
// (100 nodes, 110 pods each, against the real API server). Four choices
// keep it low, each a deliberate difference from a kubelet:
//
//   - the evented PLEG (the kubelet's EventedPLEG gate) rather than a relist
//     every second (RelistingPLEG switches back);
//   - the fake is called in process with its listings shared
//     (runtime.WithSharedListResponses) and keeps compact configs
//     (fake.WithCompactConfigs);
//   - each node's event correlator caches 32 objects, not 4096
//     (EventCacheSize);
//   - a process of hollow nodes should run with GOGC=GCPercent (25), as
//     examples/hollownodes does: its heap is the nodes' long-lived state.
type Config struct {
	// Rest reaches the API server; required. Its identity must be allowed
	// to act for every node (see the package doc).
	Rest *rest.Config
	// Nodes is how many hollow nodes to run (at least 1).
	Nodes int
	// NamePrefix names node i NamePrefix+i ("hollow-node-").
	NamePrefix string
	// CPU (cores), Memory (bytes) and MaxPods are each node's capacity
	// (4, 16 GiB, 110).
	CPU     int
	Memory  int64
	MaxPods int
	// Labels and Taints are registered with every node.
	Labels map[string]string
	Taints []v1.Taint
	// QPS and Burst limit each node's requests (50, 100).
	QPS   float32
	Burst int
	// EventCacheSize is each node's event correlator LRU cache size
	// (default DefaultEventCacheSize): fewer repeated events are
	// aggregated than by a kubelet, for less memory.
	EventCacheSize int
	// ServePorts makes the fake really serve the test image's HTTP and
	// gRPC on its pods' loopback IPs, so that probes of such pods pass as
	// on a real node. Off, an HTTP probe of a pod fails (nothing listens).
	ServePorts bool
	// RelistingPLEG runs the relisting PLEG (the kubelet's default, a
	// relist every second) instead of the evented one (the kubelet's
	// EventedPLEG gate), which hollow nodes run by default: the fake's
	// container events cost a node nearly nothing, relisting 110 pods each
	// second most of its CPU.
	RelistingPLEG bool
	// KeepNodes leaves the Node objects and leases behind when Run ends;
	// by default they are deleted.
	KeepNodes bool
	// Dir holds the nodes' root directories and runtime sockets (default:
	// a temporary directory, removed when Run ends).
	Dir string
	// Agent, if set, edits each node's nodeagent.Config before it is
	// composed (e.g. its periods).
	Agent func(i int, c *nodeagent.Config)
	// Registerer gets every node's metrics under a "node" label (nil:
	// none).
	Registerer prometheus.Registerer
	// Clock paces every node (default clock.RealClock{}).
	Clock clock.WithTicker
	Log   logr.Logger
}

func (c Config) withDefaults() (Config, error) {
	if c.Rest == nil {
		return c, errors.New("hollow: Config.Rest: Required value")
	}
	if c.Nodes < 1 {
		return c, fmt.Errorf("hollow: Config.Nodes: Invalid value: %d: must be at least 1", c.Nodes)
	}
	if c.Nodes > maxNodes {
		return c, fmt.Errorf("hollow: Config.Nodes: Invalid value: %d: at most %d", c.Nodes, maxNodes)
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"CPU", int64(c.CPU)}, {"Memory", c.Memory}, {"MaxPods", int64(c.MaxPods)}, {"Burst", int64(c.Burst)},
		{"EventCacheSize", int64(c.EventCacheSize)}} {
		if f.v < 0 {
			return c, fmt.Errorf("hollow: Config.%s: Invalid value: %d: must not be negative", f.name, f.v)
		}
	}
	if c.NamePrefix == "" {
		c.NamePrefix = DefaultNamePrefix
	}
	if c.CPU == 0 {
		c.CPU = DefaultCPU
	}
	if c.Memory == 0 {
		c.Memory = DefaultMemory
	}
	if c.MaxPods == 0 {
		c.MaxPods = DefaultMaxPods
	}
	if c.QPS == 0 {
		c.QPS = DefaultQPS
	}
	if c.Burst == 0 {
		c.Burst = DefaultBurst
	}
	if c.EventCacheSize == 0 {
		c.EventCacheSize = DefaultEventCacheSize
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Log.GetSink() == nil {
		c.Log = logr.Discard()
	}
	return c, nil
}

// Nodes is a set of running hollow nodes.
type Nodes struct {
	cfg   Config
	conns *nodeagent.APIConnections
	// services is every node's: one watch of the Services, not one each.
	services *nodeagent.ServiceCache
	dir      string
	tempDir  bool
	nodes    []*Node
	runOnce  sync.Once
}

// New starts each node's fake runtime and composes its agent; nothing
// talks to the API server until Run. On error, what was started is
// stopped.
func New(ctx context.Context, cfg Config) (_ *Nodes, err error) {
	if cfg, err = cfg.withDefaults(); err != nil {
		return nil, err
	}
	n := &Nodes{cfg: cfg, dir: cfg.Dir}
	if n.dir == "" {
		if n.dir, err = os.MkdirTemp("", "hollow-"); err != nil {
			return nil, fmt.Errorf("hollow: %w", err)
		}
		n.tempDir = true
	}
	defer func() {
		if err != nil {
			n.close()
		}
	}()
	if n.conns, err = nodeagent.NewAPIConnections(cfg.Rest); err != nil {
		return nil, fmt.Errorf("hollow: Config.Rest: %w", err)
	}
	client, err := n.conns.Client(rest.CopyConfig(cfg.Rest))
	if err != nil {
		return nil, fmt.Errorf("hollow: Config.Rest: %w", err)
	}
	n.services = nodeagent.NewServiceCache(client)
	for i := 0; i < cfg.Nodes; i++ {
		node, err := n.newNode(ctx, i)
		if err != nil {
			return nil, err
		}
		n.nodes = append(n.nodes, node)
	}
	return n, nil
}

// Nodes returns the hollow nodes, in order.
func (n *Nodes) Nodes() []*Node { return n.nodes }

// Run runs every node until ctx ends, then deletes the Nodes and their
// leases (unless KeepNodes), stops the runtimes and closes the
// connections. It returns the first node's error other than the context's.
// Run runs once.
func (n *Nodes) Run(ctx context.Context) error {
	err := errors.New("hollow: Run called twice")
	n.runOnce.Do(func() { err = n.run(ctx) })
	return err
}

func (n *Nodes) run(ctx context.Context) error {
	defer n.close()
	errs := make([]error, len(n.nodes))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); n.services.Run(ctx) }()
	for i, node := range n.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := node.agent.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				errs[i] = fmt.Errorf("%s: %w", node.Name, err)
			}
		}()
	}
	wg.Wait()
	if !n.cfg.KeepNodes {
		n.forgetNodes()
	}
	return errors.Join(errs...)
}

func (n *Nodes) close() {
	for _, node := range n.nodes {
		node.close()
	}
	if n.conns != nil {
		n.conns.Close()
	}
	if n.tempDir {
		_ = os.RemoveAll(n.dir)
	}
}

func (n *Nodes) nodeDir(name string) string { return filepath.Join(n.dir, name) }
