package hollow

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/kubeapi"
	"github.com/nodekit-dev/nodekit/nodeagent"
	"github.com/nodekit-dev/nodekit/nodestatus"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

// maxNodes keeps node and pod IPs distinct loopback addresses.
const maxNodes = 64000

// Node is one hollow node: a nodeagent.Agent on its own fake runtime.
type Node struct {
	// Name is the Node's name.
	Name   string
	agent  *nodeagent.Agent
	fake   *fake.Runtime
	client *runtime.Client
	api    kubeapi.Interface
}

// newNode starts node i's fake runtime and composes its agent.
func (n *Nodes) newNode(ctx context.Context, i int) (_ *Node, err error) {
	cfg := n.cfg
	node := &Node{Name: fmt.Sprintf("%s%d", cfg.NamePrefix, i)}
	defer func() {
		if err != nil {
			node.close()
		}
	}()
	dir := n.nodeDir(node.Name)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("hollow: %s: %w", node.Name, err)
	}
	node.fake = fake.New(fake.WithImages(fake.PauseImage, fake.TestbinImage), fake.WithAnyImagePullable(), fake.WithCompactConfigs(),
		fake.WithHostPorts(cfg.ServePorts), fake.WithClock(cfg.Clock), fake.WithPodIPs(podIPs(i)))
	// Called in process: the runtime manager's CRI calls, timeouts and
	// errors as over a socket, without encoding each one twice.
	node.client = runtime.NewInProcessClient(node.fake, runtime.WithSharedListResponses())
	if node.api, err = nodeClient(cfg, n.conns); err != nil {
		return nil, err
	}
	ac := nodeagent.Config{NodeName: node.Name, NodeIP: nodeIP(i), RootDir: filepath.Join(dir, "root"),
		PodLogsDir: filepath.Join(dir, "logs"), MaxPods: cfg.MaxPods, Labels: cfg.Labels, Taints: cfg.Taints,
		Machine: &nodestatus.MachineInfo{NumCPU: cfg.CPU, MemoryCapacity: cfg.Memory, RootfsCapacity: 100 << 30,
			MachineID: node.Name, SystemUUID: node.Name, BootID: node.Name, KernelVersion: "hollow", OSImage: "nodekit hollow node"},
		Runtime: node.client, RuntimeOnHost: ptr.To(false), Client: node.api, Services: n.services, EventedPLEG: !cfg.RelistingPLEG, Clock: cfg.Clock,
		EventCacheSize: cfg.EventCacheSize,
		Log:            cfg.Log.WithValues("node", node.Name)}
	if cfg.Registerer != nil {
		ac.Registerer = prometheus.WrapRegistererWith(prometheus.Labels{"node": node.Name}, cfg.Registerer)
	}
	if cfg.Agent != nil {
		cfg.Agent(i, &ac)
	}
	if node.agent, err = nodeagent.New(ctx, ac); err != nil {
		return nil, fmt.Errorf("hollow: %s: %w", node.Name, err)
	}
	return node, nil
}

// nodeClient is a node's API client: the shared connections, its own
// rate limiter (the kubelet's QPS and burst).
func nodeClient(cfg Config, conns *nodeagent.APIConnections) (kubeapi.Interface, error) {
	rc := rest.CopyConfig(cfg.Rest)
	rc.QPS, rc.Burst, rc.RateLimiter = cfg.QPS, cfg.Burst, nil
	c, err := conns.Client(rc)
	if err != nil {
		return nil, fmt.Errorf("hollow: Config.Rest: %w", err)
	}
	return c, nil
}

// nodeIP is node i's InternalIP: 127.1.x.y, a loopback address of its own.
func nodeIP(i int) string { return fmt.Sprintf("127.1.%d.%d", i/254, i%254+1) }

// podIPs gives node i's pods 127.(2+i/256).(i%256).(1..254), reused
// after 254 sandboxes: distinct from every other node's, and loopback so
// that ServePorts never listens beyond this machine.
func podIPs(i int) func(n int) string {
	return func(n int) string { return fmt.Sprintf("127.%d.%d.%d", 2+i/256, i%256, (n-1)%254+1) }
}

// Agent is the node's agent (its pods, statuses, handlers).
func (n *Node) Agent() *nodeagent.Agent { return n.agent }

// Runtime is the node's fake runtime, for what the knobs below do not
// cover (fake.Runtime's InjectError, Exit, SetLatency...).
func (n *Node) Runtime() *fake.Runtime { return n.fake }

// SetStartLatency makes each container start take d (on the clock).
func (n *Node) SetStartLatency(d time.Duration) { n.fake.SetLatency("StartContainer", d) }

// FailPulls makes pulling image fail with err (nil: pulls succeed again).
func (n *Node) FailPulls(image string, err error) { n.fake.SetPullBehavior(image, 0, err) }

// SetBehavior sets what containers of image created from now on do: e.g.
// fake.BehaviorOf(fake.ExitsAfter(time.Second, 1)) for a crash loop.
func (n *Node) SetBehavior(image string, b fake.Behavior) error { return n.fake.SetBehavior(image, b) }

// SetReady makes the node's runtime report itself ready or not: the Node
// goes NotReady (KubeletNotReady, "container runtime is down") at its next
// status update, and back.
func (n *Node) SetReady(ready bool) {
	reason, message := "", ""
	if !ready {
		reason, message = "HollowNotReady", "set not ready by the test"
	}
	n.fake.SetRuntimeCondition(runtimeapi.RuntimeReady, ready, reason, message)
}

func (n *Node) close() {
	if n.client != nil {
		n.client.Close(context.Background())
	}
	if n.fake != nil {
		n.fake.Close()
	}
}

// forgetNodes deletes the Nodes and their leases, as a drained node leaves.
func (n *Nodes) forgetNodes() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, node := range n.nodes {
		err := node.api.Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{})
		err = errors.Join(err, node.api.Leases(nodestatus.LeaseNamespace).Delete(ctx, node.Name, metav1.DeleteOptions{}))
		if err != nil {
			n.cfg.Log.V(2).Info("removing the node", "node", node.Name, "error", err.Error())
		}
	}
}
