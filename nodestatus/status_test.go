package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"

	"github.com/nodekit-dev/nodekit/kubeapi/clientgo"
)

var t0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

func machine() MachineInfo {
	return MachineInfo{NumCPU: 4, MemoryCapacity: 8 << 30, RootfsCapacity: 100 << 30, Hugepages: map[int64]int64{2 << 20: 512},
		MachineID: "m1", SystemUUID: "u1", BootID: "b1", KernelVersion: "6.1.0", OSImage: "Debian GNU/Linux 12 (bookworm)"}
}

type pressureFlags struct{ mem, disk, pid bool }

func (p *pressureFlags) MemoryPressure() bool { return p.mem }
func (p *pressureFlags) DiskPressure() bool   { return p.disk }
func (p *pressureFlags) PIDPressure() bool    { return p.pid }

type images []kc.Image

func (i images) Images(context.Context) ([]kc.Image, error) { return i, nil }

func newNode(t *testing.T, mod func(*Config)) (*Builder, *clocktesting.FakeClock) {
	clk := clocktesting.NewFakeClock(t0)
	cfg := Config{NodeName: "node-1", NodeIP: "127.0.0.1", Machine: machine(), Clock: clk,
		ContainerRuntimeVersion: "containerd://1.6.20", KubeReserved: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}}
	if mod != nil {
		mod(&cfg)
	}
	n, err := New(cfg)
	require.NoError(t, err)
	return n, clk
}

func TestInitialNode(t *testing.T) {
	n, _ := newNode(t, func(c *Config) {
		c.Labels = map[string]string{"node-role.kubernetes.io/worker": ""}
		c.Taints = []v1.Taint{{Key: "dedicated", Value: "infra", Effect: v1.TaintEffectNoSchedule}}
	})
	node := n.Initial(context.Background())
	assert.Equal(t, "node-1", node.Name)
	assert.Equal(t, map[string]string{"kubernetes.io/hostname": "node-1", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64", "node-role.kubernetes.io/worker": ""}, node.Labels)
	assert.Equal(t, []v1.Taint{{Key: "dedicated", Value: "infra", Effect: v1.TaintEffectNoSchedule}}, node.Spec.Taints)
	s := node.Status
	assert.Equal(t, []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.0.0.1"}, {Type: v1.NodeHostName, Address: "node-1"}}, s.Addresses)
	for name, want := range map[v1.ResourceName]string{"cpu": "4", "memory": "8Gi", "pods": "110", "ephemeral-storage": "100Gi", "hugepages-2Mi": "1Gi"} {
		q := s.Capacity[name]
		assert.Equal(t, want, q.String(), "capacity %s", name)
	}
	// memory: 8Gi - 1Gi kube-reserved - 100Mi eviction - 1Gi hugepages; storage: 100Gi - 10%, where 10% is
	// the kubelet's float32 0.1 (0.10000000149...): 107374182400 - 10737418400 = 96636764000, not 90Gi.
	for name, want := range map[v1.ResourceName]string{"cpu": "4", "memory": "6044Mi", "pods": "110", "ephemeral-storage": "96636764000"} {
		q := s.Allocatable[name]
		assert.Equal(t, want, q.String(), "allocatable %s", name)
	}
	assert.Equal(t, v1.NodeSystemInfo{MachineID: "m1", SystemUUID: "u1", BootID: "b1", KernelVersion: "6.1.0",
		OSImage: "Debian GNU/Linux 12 (bookworm)", ContainerRuntimeVersion: "containerd://1.6.20", KubeletVersion: DefaultKubeletVersion,
		OperatingSystem: "linux", Architecture: "amd64"}, s.NodeInfo)
	assert.Equal(t, int32(10250), s.DaemonEndpoints.KubeletEndpoint.Port)
	var types []v1.NodeConditionType
	for _, c := range s.Conditions {
		types = append(types, c.Type)
	}
	assert.Equal(t, []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure, v1.NodeReady}, types)
}

func condition(node *v1.Node, t v1.NodeConditionType) v1.NodeCondition {
	for _, c := range node.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return v1.NodeCondition{}
}

func TestConditionsFollowChecksAndPressure(t *testing.T) {
	var runtimeErr, plegErr error
	p := &pressureFlags{}
	n, clk := newNode(t, func(c *Config) {
		c.Pressure = p
		c.ReadyChecks = []Check{
			func(context.Context) error { return runtimeErr },
			PLEGCheck(func() (bool, error) { return plegErr == nil, plegErr }),
		}
	})
	ctx := context.Background()
	node := n.Initial(ctx)
	ready := condition(node, v1.NodeReady)
	assert.Equal(t, v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady",
		Message: "kubelet is posting ready status", LastHeartbeatTime: ready.LastHeartbeatTime, LastTransitionTime: ready.LastTransitionTime}, ready)
	mem := condition(node, v1.NodeMemoryPressure)
	assert.Equal(t, "KubeletHasSufficientMemory", mem.Reason)
	assert.Equal(t, "kubelet has sufficient memory available", mem.Message)

	for _, step := range []struct {
		name        string
		runtime     error
		pleg        error
		memPressure bool
		status      v1.ConditionStatus
		message     string
		transition  bool
	}{
		{"still ready: only the heartbeat moves", nil, nil, false, v1.ConditionTrue, "kubelet is posting ready status", false},
		{"runtime down", errors.New("container runtime is down"), nil, false, v1.ConditionFalse, "container runtime is down", true},
		{"and the PLEG", errors.New("container runtime is down"), errors.New("pleg was last seen active 3m1s ago; threshold is 3m0s"), true,
			v1.ConditionFalse, "[container runtime is down, PLEG is not healthy: pleg was last seen active 3m1s ago; threshold is 3m0s]", false},
		{"recovered", nil, nil, false, v1.ConditionTrue, "kubelet is posting ready status", true},
	} {
		before := condition(node, v1.NodeReady)
		clk.Step(10 * time.Second)
		runtimeErr, plegErr, p.mem = step.runtime, step.pleg, step.memPressure
		n.SetStatus(ctx, node)
		got := condition(node, v1.NodeReady)
		assert.Equal(t, step.status, got.Status, step.name)
		assert.Equal(t, step.message, got.Message, step.name)
		assert.Equal(t, clk.Now(), got.LastHeartbeatTime.Time, step.name)
		if step.transition {
			assert.Equal(t, clk.Now(), got.LastTransitionTime.Time, step.name)
		} else {
			assert.Equal(t, before.LastTransitionTime, got.LastTransitionTime, step.name)
		}
		if step.status == v1.ConditionFalse {
			assert.Equal(t, "KubeletNotReady", got.Reason, step.name)
		}
	}
	p.mem = true
	n.SetStatus(ctx, node)
	mem = condition(node, v1.NodeMemoryPressure)
	assert.Equal(t, v1.ConditionTrue, mem.Status)
	assert.Equal(t, "KubeletHasInsufficientMemory", mem.Reason)
}

func TestMissingCapacityMakesNodeNotReady(t *testing.T) {
	n, _ := newNode(t, func(c *Config) { c.Machine.NumCPU = 0 })
	ready := condition(n.Initial(context.Background()), v1.NodeReady)
	assert.Equal(t, v1.ConditionFalse, ready.Status)
	assert.Equal(t, "missing node capacity for resources: cpu", ready.Message)
}

func TestImagesLargestFirstCapped(t *testing.T) {
	var imgs images
	for i := 0; i < MaxImages+10; i++ {
		imgs = append(imgs, kc.Image{ID: "sha256:x", RepoTags: []string{"t:" + string(rune('a'+i%26))}, Size: uint64(i)})
	}
	imgs = append(imgs, kc.Image{ID: "sha256:big", Size: 1 << 40}) // no name: left out
	imgs = append(imgs, kc.Image{ID: "sha256:many", RepoDigests: []string{"r@sha256:1"}, RepoTags: []string{"a", "b", "c", "d", "e", "f"}, Size: 1 << 30})
	n, _ := newNode(t, func(c *Config) { c.Images = imgs })
	got := n.Initial(context.Background()).Status.Images
	require.Len(t, got, MaxImages)
	assert.Equal(t, v1.ContainerImage{Names: []string{"r@sha256:1", "a", "b", "c", "d"}, SizeBytes: 1 << 30}, got[0])
	assert.Equal(t, int64(MaxImages+9), got[1].SizeBytes)
	assert.Equal(t, int64(11), got[MaxImages-1].SizeBytes, "59 down to 11 after the 1Gi one")
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{NodeName: "Node_1", NodeIP: "127.0.0.1"}, `Config.NodeName: Invalid value: "Node_1"`},
		{Config{NodeName: "n", NodeIP: "localhost"}, `Config.NodeIP: Invalid value: "localhost"`},
		{Config{NodeName: "n", NodeIP: "127.0.0.1", MaxPods: -1}, `Config.MaxPods: Invalid value: -1`},
		{Config{NodeName: "n", NodeIP: "127.0.0.1", Labels: map[string]string{"a b": "x"}}, `Config.Labels: Invalid value: "a b"`},
		{Config{NodeName: "n", NodeIP: "127.0.0.1", KubeReserved: v1.ResourceList{"memory": resource.MustParse("-1")}}, `KubeReserved[memory]=-1`},
	} {
		_, err := New(tc.cfg)
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}
}

func TestStatusChangedIgnoresHeartbeats(t *testing.T) {
	n, clk := newNode(t, nil)
	node := n.Initial(context.Background())
	before := node.DeepCopy()
	clk.Step(time.Minute)
	n.SetStatus(context.Background(), node)
	assert.False(t, statusChanged(&before.Status, &node.Status), "only heartbeats moved")
	node.Status.Addresses[0].Address = "127.0.0.2"
	assert.True(t, statusChanged(&before.Status, &node.Status))
}

func BenchmarkNodeStatus(b *testing.B) {
	var imgs images
	for i := 0; i < 200; i++ {
		imgs = append(imgs, kc.Image{RepoTags: []string{"registry.local/img:" + string(rune('a'+i%26))}, RepoDigests: []string{"registry.local/img@sha256:0"}, Size: uint64(i << 20)})
	}
	clk := clocktesting.NewFakeClock(t0)
	n, err := New(Config{NodeName: "node-1", NodeIP: "127.0.0.1", Machine: machine(), Clock: clk, Images: imgs,
		ReadyChecks: []Check{func(context.Context) error { return nil }}})
	require.NoError(b, err)
	ctx := context.Background()
	node := n.Initial(ctx)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		old := node.DeepCopy()
		clk.Step(10 * time.Second)
		n.SetStatus(ctx, node)
		if statusChanged(&old.Status, &node.Status) {
			b.Fatal("status changed")
		}
	}
}

type events struct{ reasons []string }

func (e *events) Eventf(_ apiruntime.Object, _, reason, format string, args ...any) {
	e.reasons = append(e.reasons, reason+": "+fmt.Sprintf(format, args...))
}

func TestNodeEventsOnChange(t *testing.T) {
	rec := &events{}
	var down error
	n, clk := newNode(t, func(c *Config) {
		c.Recorder = rec
		c.ReadyChecks = []Check{func(context.Context) error { return down }}
	})
	ctx := context.Background()
	node, err := n.Register(ctx, clientgo.Adapt(fake.NewClientset()))
	require.NoError(t, err)
	assert.Equal(t, []string{"NodeHasSufficientMemory: Node node-1 status is now: NodeHasSufficientMemory",
		"NodeHasNoDiskPressure: Node node-1 status is now: NodeHasNoDiskPressure",
		"NodeHasSufficientPID: Node node-1 status is now: NodeHasSufficientPID",
		"NodeReady: Node node-1 status is now: NodeReady"}, rec.reasons)
	rec.reasons = nil
	clk.Step(10 * time.Second)
	n.SetStatus(ctx, node)
	assert.Empty(t, rec.reasons, "nothing changed")
	down = errors.New("container runtime is down")
	n.SetStatus(ctx, node)
	assert.Equal(t, []string{"NodeNotReady: Node node-1 status is now: NodeNotReady"}, rec.reasons)
}

// kubelet initialNode (getNodeAnyWay before the API's Node is known): what
// the predicate admit handler reads.
func TestForAdmissionIsTheInitialNodeWithoutStatus(t *testing.T) {
	n, _ := newNode(t, func(c *Config) {
		c.Labels = map[string]string{"disk": "ssd"}
		c.Taints = []v1.Taint{{Key: "dedicated", Value: "infra", Effect: v1.TaintEffectNoExecute}}
		c.MaxPods = 3
	})
	node := n.ForAdmission()
	initial := n.Initial(context.Background())
	assert.Equal(t, initial.ObjectMeta, node.ObjectMeta)
	assert.Equal(t, initial.Spec, node.Spec)
	assert.Equal(t, initial.Status.Allocatable, node.Status.Allocatable)
	assert.Equal(t, initial.Status.Capacity, node.Status.Capacity)
	pods := node.Status.Allocatable[v1.ResourcePods]
	assert.Equal(t, int64(3), pods.Value(), "--max-pods")
	assert.Empty(t, node.Status.Conditions)
}
