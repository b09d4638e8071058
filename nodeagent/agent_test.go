package nodeagent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakeclient "k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/kubeapi/clientgo"
	"github.com/nodekit-dev/nodekit/nodeagent"
	"github.com/nodekit-dev/nodekit/nodestatus"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

// fakeRuntime serves a fake runtime on clk until the test ends and
// returns a client connected to it.
func fakeRuntime(t *testing.T, clk *testingclock.FakeClock) *runtime.Client {
	t.Helper()
	f := fake.New(fake.WithClock(clk), fake.WithImages(fake.PauseImage, fake.TestbinImage))
	endpoint := "unix://" + filepath.Join(t.TempDir(), "cri.sock")
	stop, err := f.Start(endpoint)
	require.NoError(t, err)
	client, err := runtime.Dial(context.Background(), endpoint)
	require.NoError(t, err)
	t.Cleanup(func() { client.Close(context.Background()); stop(); f.Close() })
	return client
}

// hollowConfig is a node with no host of its own: a declared machine, no
// eviction manager, the fake runtime (not on this host), a static
// manifest directory.
func hollowConfig(t *testing.T, clk *testingclock.FakeClock, manifests string) nodeagent.Config {
	return nodeagent.Config{NodeName: "n1", NodeIP: "127.0.0.1", RootDir: t.TempDir(), PodLogsDir: t.TempDir(),
		ManifestPath: manifests, Runtime: fakeRuntime(t, clk), RuntimeOnHost: ptr.To(false), Clock: clk,
		Machine: &nodestatus.MachineInfo{NumCPU: 4, MemoryCapacity: 8 << 30, RootfsCapacity: 100 << 30, MachineID: "m1"}}
}

// webManifest is a manifest directory with one static pod "web" (testbin
// serve).
func webManifest(t *testing.T) string { return servingManifests(t, "web") }

// servingManifests is a manifest directory with a static pod of each name
// (testbin serve).
func servingManifests(t *testing.T, names ...string) string {
	dir := t.TempDir()
	for _, name := range names {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".yaml"), []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: "+name+"}\n"+
			"spec:\n  containers:\n  - {name: c, image: "+fake.TestbinImage+", args: [serve]}\n"), 0o644))
	}
	return dir
}

// runAgent runs a until the test ends, then checks Run returned nil.
func runAgent(t *testing.T, ctx context.Context, a *nodeagent.Agent) {
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	t.Cleanup(func() { stop(); require.NoError(t, <-done) })
}

func TestAgentRunsAStaticPodOnTheFakeRuntime(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	manifests := webManifest(t)
	clk := testingclock.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	reg := prometheus.NewRegistry()
	cfg := hollowConfig(t, clk, manifests)
	cfg.Registerer, cfg.Gatherer = reg, reg
	a, err := nodeagent.New(ctx, cfg)
	require.NoError(t, err)

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	running := func() bool {
		clk.Step(time.Second) // the PLEG relists, the workers resync
		for _, p := range a.Pods() {
			if p.Name == "web-n1" && p.Status.Phase == v1.PodRunning {
				return true
			}
		}
		return false
	}
	poll.Eventually(t, running, 20*time.Second, 10*time.Millisecond, "static pod Running")
	assert.Equal(t, fake.RuntimeName, a.RuntimeName())
	assert.Nil(t, a.Cgroups(), "no cgroups on the fake runtime")
	mfs, err := reg.Gather()
	require.NoError(t, err)
	assert.NotEmpty(t, mfs, "the agent's metrics are on the caller's registry")

	stop()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("Run did not return after its context ended")
	}
	assert.ErrorContains(t, a.Run(ctx), "Run called twice")
}

// Agents in one process share a registry, each under its node's label
// (as hollow nodes will): their metrics do not collide.
func TestAgentsShareARegistryByNodeLabel(t *testing.T) {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(time.Now())
	reg := prometheus.NewRegistry()
	for _, name := range []string{"n1", "n2"} {
		cfg := hollowConfig(t, clk, "")
		cfg.NodeName = name
		cfg.Registerer = prometheus.WrapRegistererWith(prometheus.Labels{"node": name}, reg)
		cfg.ProbeRegisterer = cfg.Registerer
		_, err := nodeagent.New(ctx, cfg)
		require.NoError(t, err, name)
	}
}

func TestNewFillsDefaultsAndRejectsBadConfig(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	for _, tc := range []struct {
		name string
		edit func(*nodeagent.Config)
		want string
	}{
		{"defaults", func(*nodeagent.Config) {}, ""},
		{"no node name", func(c *nodeagent.Config) { c.NodeName = "" }, "Config.NodeName: Required value"},
		{"no node IP", func(c *nodeagent.Config) { c.NodeIP = "" }, "Config.NodeIP: Required value"},
		{"no runtime", func(c *nodeagent.Config) { c.Runtime = nil }, "Config.Runtime: Required value"},
		{"negative sync frequency", func(c *nodeagent.Config) { c.SyncFrequency = -time.Second },
			"Config.SyncFrequency: Invalid value: -1s"},
		{"negative max pods", func(c *nodeagent.Config) { c.MaxPods = -1 }, "Config.MaxPods: Invalid value: -1"},
		{"cgroup driver", func(c *nodeagent.Config) { c.CgroupDriver = "cgroupv3" }, `Config.CgroupDriver: Unsupported value: "cgroupv3"`},
		{"bad eviction threshold", func(c *nodeagent.Config) {
			hard := "memory.available<lots"
			c.Eviction = &nodeagent.EvictionConfig{}
			c.Eviction.Flags.Hard = &hard
		}, "lots"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := hollowConfig(t, clk, "")
			cfg.KubeReserved = v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}
			tc.edit(&cfg)
			a, err := nodeagent.New(context.Background(), cfg)
			if tc.want == "" {
				require.NoError(t, err)
				assert.NotNil(t, a.APIHandler())
				assert.NotNil(t, a.ReadOnlyHandler())
				return
			}
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// Events go through Config.EventClient and the Node's status and lease
// through Config.HeartbeatClient, not through Client.
func TestAgentSplitsItsRequestsAcrossClients(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clk := testingclock.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	cfg := hollowConfig(t, clk, webManifest(t))
	main, events, heartbeat := fakeclient.NewClientset(), fakeclient.NewClientset(), fakeclient.NewClientset()
	cfg.Client, cfg.EventClient, cfg.HeartbeatClient = clientgo.Adapt(main), clientgo.Adapt(events), clientgo.Adapt(heartbeat)
	a, err := nodeagent.New(ctx, cfg)
	require.NoError(t, err)
	runAgent(t, ctx, a)
	poll.Eventually(t, func() bool {
		clk.Step(time.Second)
		l, _ := events.CoreV1().Events("").List(ctx, metav1.ListOptions{})
		_, leaseErr := heartbeat.CoordinationV1().Leases("kube-node-lease").Get(ctx, "n1", metav1.GetOptions{})
		return len(l.Items) > 0 && leaseErr == nil
	}, 20*time.Second, 10*time.Millisecond, "events through EventClient, the lease through HeartbeatClient")
	l, err := main.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, l.Items, "no event through Client")
	_, err = main.CoordinationV1().Leases("kube-node-lease").Get(ctx, "n1", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "no lease through Client: %v", err)
}

// With Config.Client the agent joins the cluster: it registers its Node
// and mirrors its static pods, and Run still returns clean (goleak).
func TestAgentJoinsTheClusterWithAClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	manifests := webManifest(t)
	clk := testingclock.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	cfg := hollowConfig(t, clk, manifests)
	client := fakeclient.NewClientset()
	cfg.Client = clientgo.Adapt(client)
	a, err := nodeagent.New(ctx, cfg)
	require.NoError(t, err)
	runAgent(t, ctx, a)
	poll.Eventually(t, func() bool {
		clk.Step(time.Second)
		_, nodeErr := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		_, mirrorErr := client.CoreV1().Pods("default").Get(ctx, "web-n1", metav1.GetOptions{})
		return nodeErr == nil && mirrorErr == nil
	}, 20*time.Second, 10*time.Millisecond, "Node registered and the static pod mirrored")
}

// The kubelet's EventedPLEG gate: the runtime's events drive the PLEG, the
// relister a 300s safety net; without it the PLEG relists every second.
func TestEventedPLEGRelistsOnlyAsASafetyNet(t *testing.T) {
	for _, tc := range []struct {
		evented      bool
		minRelists   float64
		maxRelists   float64
		relistPeriod string
	}{{false, 10, 1000, "1s"}, {true, 0, 2, "300s"}} {
		t.Run(fmt.Sprintf("evented=%v relists every %s", tc.evented, tc.relistPeriod), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			manifests := webManifest(t)
			clk := testingclock.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
			reg := prometheus.NewRegistry()
			cfg := hollowConfig(t, clk, manifests)
			cfg.Registerer, cfg.EventedPLEG = reg, tc.evented
			a, err := nodeagent.New(ctx, cfg)
			require.NoError(t, err)
			runAgent(t, ctx, a)
			poll.Eventually(t, func() bool {
				clk.Step(100 * time.Millisecond)
				ps := a.Pods()
				return len(ps) == 1 && ps[0].Status.Phase == v1.PodRunning
			}, 20*time.Second, 10*time.Millisecond, "static pod Running")
			relists := func() float64 {
				mfs, err := reg.Gather()
				require.NoError(t, err)
				for _, mf := range mfs {
					if mf.GetName() == "kubelet_pleg_relist_duration_seconds" {
						return float64(mf.GetMetric()[0].GetHistogram().GetSampleCount())
					}
				}
				return 0
			}
			before := relists()
			if !tc.evented {
				poll.Eventually(t, func() bool { clk.Step(time.Second); return relists()-before >= tc.minRelists },
					10*time.Second, 10*time.Millisecond, "a relist every second")
				return
			}
			for range 15 {
				clk.Step(time.Second)
			}
			assert.Never(t, func() bool { return relists()-before > tc.maxRelists }, 300*time.Millisecond, 10*time.Millisecond,
				"no relist but the 300s safety net's")
		})
	}
}

// The kubelet's predicate admission (canAdmitPod, Fits): --max-pods is the
// node's allocatable pods, and a pod over it is rejected as Failed with
// OutOfpods, while the pods admitted before it run on.
func TestAgentRejectsAPodOverMaxPods(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	manifests := servingManifests(t, "a", "b")
	clk := testingclock.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	cfg := hollowConfig(t, clk, manifests)
	cfg.MaxPods = 1
	a, err := nodeagent.New(ctx, cfg)
	require.NoError(t, err)
	runAgent(t, ctx, a)

	phases := func() map[v1.PodPhase][]v1.Pod {
		clk.Step(time.Second)
		byPhase := map[v1.PodPhase][]v1.Pod{}
		for _, p := range a.Pods() {
			byPhase[p.Status.Phase] = append(byPhase[p.Status.Phase], p)
		}
		return byPhase
	}
	poll.Eventually(t, func() bool {
		p := phases()
		return len(p[v1.PodRunning]) == 1 && len(p[v1.PodFailed]) == 1
	}, 20*time.Second, 10*time.Millisecond, "one pod Running, the other rejected")
	rejected := phases()[v1.PodFailed][0]
	assert.Equal(t, "OutOfpods", rejected.Status.Reason)
	assert.Equal(t, "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 1, capacity: 1", rejected.Status.Message)
	assert.Empty(t, rejected.Status.ContainerStatuses, "the kubelet's rejectPod status has no container statuses")
	onNode, err := a.Runtime().GetPods(ctx, true)
	require.NoError(t, err)
	require.Len(t, onNode, 1, "a rejected pod never reaches the runtime")
	assert.NotEqual(t, rejected.UID, onNode[0].ID)
}
