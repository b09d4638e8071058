//go:build integration

package nodeagent_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/cgroupmgr"
	"github.com/nodekit-dev/nodekit/eviction"
	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/testenv"
	"github.com/nodekit-dev/nodekit/kubeapi"
	"github.com/nodekit-dev/nodekit/nodeagent"
	"github.com/nodekit-dev/nodekit/nodestatus"
)

// clusterPods drives API pods on the test's node and cleans them up.
type clusterPods struct {
	t   *testing.T
	ctx context.Context
	api *testenv.APIServer
	a   *nodeagent.Agent
	// metrics are the agent's (Config.Gatherer).
	metrics prometheus.Gatherer
	names   []string
}

func (c *clusterPods) create(name string, spec v1.PodSpec) {
	c.t.Helper()
	spec.NodeName = c.api.Node
	_, err := c.api.Admin.CoreV1().Pods("default").Create(c.ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec},
		metav1.CreateOptions{})
	require.NoError(c.t, err)
	c.names = append(c.names, name)
}

func (c *clusterPods) get(name string) *v1.Pod {
	p, err := c.api.Admin.CoreV1().Pods("default").Get(c.ctx, name, metav1.GetOptions{})
	if err != nil {
		return &v1.Pod{}
	}
	return p
}

func (c *clusterPods) nodeCondition(t v1.NodeConditionType) v1.ConditionStatus {
	n, err := c.api.Admin.CoreV1().Nodes().Get(c.ctx, c.api.Node, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == t {
			return cond.Status
		}
	}
	return ""
}

func (c *clusterPods) events(name string) []string {
	evs, err := c.api.Admin.CoreV1().Events("default").List(c.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	require.NoError(c.t, err)
	var out []string
	for _, e := range evs.Items {
		out = append(out, e.Reason+": "+e.Message)
	}
	return out
}

// cleanup deletes the test's pods at once and waits until containerd has
// none of them, so that nothing holds the test's mounts.
func (c *clusterPods) cleanup() {
	for _, n := range c.names {
		_ = c.api.Admin.CoreV1().Pods("default").Delete(c.ctx, n, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	}
	poll.Eventually(c.t, func() bool {
		for _, n := range c.names {
			if _, err := c.api.Admin.CoreV1().Pods("default").Get(c.ctx, n, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false
			}
		}
		pods, err := c.a.Runtime().GetPods(c.ctx, true)
		if err != nil {
			return false
		}
		for _, p := range pods { // other tests' static pods of this node may stay
			if slices.Contains(c.names, p.Name) {
				return false
			}
		}
		return true
	}, 60*time.Second, 100*time.Millisecond, "the test's pods gone from the API and containerd")
}

// startClusterAgent starts the agent in cluster mode on containerd as the
// test's node, with the node's credentials, syncing every pod every 2s
// and its status every 1s; edit may change the Config first. The Node and
// lease go at the end.
func startClusterAgent(t *testing.T, ctx context.Context, edit ...func(*nodeagent.Config)) (*clusterPods, func()) {
	cd := testenv.NeedContainerd(t)
	api := testenv.NeedAPIServer(t)
	forget := func() { // also when the test ends, after ctx: a context of its own
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = api.Admin.CoreV1().Nodes().Delete(ctx, api.Node, metav1.DeleteOptions{})
		_ = api.Admin.CoordinationV1().Leases(nodestatus.LeaseNamespace).Delete(ctx, api.Node, metav1.DeleteOptions{})
	}
	forget()
	t.Cleanup(forget)
	cfg := containerdConfig(t, cd, api.Node)
	cfg.Client = apiClient(t, api.NodeConfig)
	cfg.ManifestPath, cfg.SyncFrequency, cfg.NodeStatusUpdateFrequency = t.TempDir(), 2*time.Second, time.Second
	for _, e := range edit {
		e(&cfg)
	}
	a, stop := startContainerdAgent(t, ctx, cfg)
	c := &clusterPods{t: t, ctx: ctx, api: api, a: a, metrics: cfg.Gatherer}
	poll.Eventually(t, func() bool { return c.nodeCondition(v1.NodeReady) == v1.ConditionTrue }, 30*time.Second, 100*time.Millisecond, "node registered")
	return c, func() { c.cleanup(); stop() }
}

// apiClient is the agent's API client over connections of its own, with
// the kubelet's rate limits, closed when the test ends (after the agent).
func apiClient(t testing.TB, rc *rest.Config) kubeapi.Interface {
	t.Helper()
	c, err := nodeagent.NewAPIClient(nodeagent.APIClientConfig{Rest: rc})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c.Client
}

// hardEviction sets the eviction manager's hard thresholds (as
// --eviction-hard) and its pressure transition period.
func hardEviction(hard string, transition time.Duration) func(*nodeagent.Config) {
	return func(c *nodeagent.Config) {
		c.Eviction = &nodeagent.EvictionConfig{Flags: eviction.Flags{Hard: &hard}, PressureTransitionPeriod: transition}
	}
}

// mountTmpfs mounts a tmpfs of size at a new directory until the test ends.
func mountTmpfs(t *testing.T, size string) string {
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput()
	require.NoError(t, err, "mount tmpfs at %s (needs root): %s", dir, out)
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// TestDiskPressureEvictsThePodFillingIt: --root-dir on a 64 MiB tmpfs,
// nodefs.available<24Mi. A pod over its emptyDir's sizeLimit is evicted
// without pressure. Then a pod's emptyDir gets 44 MiB: the node reports
// DiskPressure, that pod (not the idle one beside it) is evicted with the
// kubelet's status and event, a pod arriving meanwhile is refused, and
// DiskPressure clears once the emptyDir is gone and the transition period
// has passed.
func TestDiskPressureEvictsThePodFillingIt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rootDir := mountTmpfs(t, "64m")
	c, stop := startClusterAgent(t, ctx, hardEviction("nodefs.available<24Mi", 20*time.Second), func(c *nodeagent.Config) {
		c.RootDir, c.CgroupsPerQOS = rootDir, ptr.To(false)
	})
	defer stop()
	assert.Equal(t, v1.ConditionFalse, c.nodeCondition(v1.NodeDiskPressure))

	sleeper := v1.Container{Name: "c", Image: "nodekit.local/testbin:1", ImagePullPolicy: v1.PullNever, Args: []string{"sleep"},
		VolumeMounts: []v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}}
	spec := v1.PodSpec{HostNetwork: true, TerminationGracePeriodSeconds: ptr.To[int64](30), Containers: []v1.Container{sleeper},
		Volumes: []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}}
	running := func(name string) bool { return c.get(name).Status.Phase == v1.PodRunning }
	// Local storage limits hold without pressure: 2 MiB in an emptyDir
	// whose sizeLimit is 1Mi evicts its pod.
	limited := *spec.DeepCopy()
	limited.Volumes[0].EmptyDir.SizeLimit = ptr.To(resource.MustParse("1Mi"))
	c.create("limited", limited)
	poll.Eventually(t, func() bool { return running("limited") }, 30*time.Second, 100*time.Millisecond, "the limited pod running")
	require.NoError(t, os.WriteFile(filepath.Join(rootDir, "pods", string(c.get("limited").UID), "volumes", "kubernetes.io~empty-dir",
		"scratch", "fill"), make([]byte, 2<<20), 0o644))
	poll.Eventually(t, func() bool { return c.get("limited").Status.Phase == v1.PodFailed }, 30*time.Second, 100*time.Millisecond, "the limited pod evicted")
	assert.Equal(t, "Evicted", c.get("limited").Status.Reason)
	assert.Equal(t, `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `, c.get("limited").Status.Message)
	assert.Equal(t, v1.ConditionFalse, c.nodeCondition(v1.NodeDiskPressure), "no pressure: 2 MiB of 64")

	c.create("filler", spec)
	c.create("idle", spec)
	poll.Eventually(t, func() bool { return running("filler") && running("idle") }, 30*time.Second, 100*time.Millisecond, "both pods running")

	// The emptyDir's directory on the node, as the container sees /scratch.
	filler := c.get("filler")
	scratch := filepath.Join(rootDir, "pods", string(filler.UID), "volumes", "kubernetes.io~empty-dir", "scratch")
	require.DirExists(t, scratch)
	require.NoError(t, os.WriteFile(filepath.Join(scratch, "fill"), make([]byte, 44<<20), 0o644))

	poll.Eventually(t, func() bool {
		return c.nodeCondition(v1.NodeDiskPressure) == v1.ConditionTrue
	}, 40*time.Second, 100*time.Millisecond, "DiskPressure in the node status")
	// A pod arriving under disk pressure is refused, whatever its QoS.
	late := spec
	late.Volumes, late.Containers = nil, []v1.Container{{Name: "c", Image: "nodekit.local/testbin:1", ImagePullPolicy: v1.PullNever,
		Args: []string{"sleep"}}}
	c.create("late", late)

	poll.Eventually(t, func() bool { return c.get("filler").Status.Phase == v1.PodFailed }, 40*time.Second, 100*time.Millisecond, "the filler evicted")
	evicted := c.get("filler").Status
	assert.Equal(t, "Evicted", evicted.Reason)
	assert.True(t, strings.HasPrefix(evicted.Message, "The node was low on resource: ephemeral-storage. Threshold quantity: 24Mi, available: "),
		evicted.Message)
	assert.Contains(t, evicted.Message, "Container c was using", "the offender named, as the kubelet does for disk")
	var disruption *v1.PodCondition
	for i := range evicted.Conditions {
		if evicted.Conditions[i].Type == v1.DisruptionTarget {
			disruption = &evicted.Conditions[i]
		}
	}
	if assert.NotNil(t, disruption, "DisruptionTarget condition") {
		assert.Equal(t, "TerminationByKubelet", disruption.Reason)
	}
	assert.NoDirExists(t, scratch, "its emptyDir is gone")
	poll.Eventually(t, func() bool {
		return strings.Contains(strings.Join(c.events("filler"), "\n"), "Evicted: The node was low on resource: ephemeral-storage.")
	}, 20*time.Second, 100*time.Millisecond, "the Evicted event")
	assert.Equal(t, v1.PodRunning, c.get("idle").Status.Phase, "one pod per pass: the idle one stays")

	poll.Eventually(t, func() bool { return c.get("late").Status.Phase == v1.PodFailed }, 20*time.Second, 100*time.Millisecond, "the late pod refused")
	refused := c.get("late").Status
	assert.Equal(t, "Evicted", refused.Reason)
	assert.Equal(t, "Pod was rejected: The node had condition: [DiskPressure]. ", refused.Message)
	assert.Equal(t, v1.PodQOSBestEffort, refused.QOSClass)

	poll.Eventually(t, func() bool {
		return c.nodeCondition(v1.NodeDiskPressure) == v1.ConditionFalse
	}, 60*time.Second, 100*time.Millisecond, "DiskPressure cleared after the transition period")
	assert.Equal(t, v1.PodFailed, c.get("filler").Status.Phase, "an evicted pod is not started again")
	assert.Equal(t, v1.PodRunning, c.get("idle").Status.Phase)
	fmt.Fprintln(os.Stderr, "events of the filler:", c.events("filler"))
}

// TestMemoryPressureEvictsTheHog: with memory.available's threshold set
// 1.5 GiB under what the node has free now, a BestEffort pod allocating
// 3 GiB in its real pod cgroup makes MemoryPressure; it, not the
// Burstable pod within its request, is evicted with the kubelet's message
// naming its container's usage, and the pressure clears.
func TestMemoryPressureEvictsTheHog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cgroupRoot := testenv.CgroupRoot + "/eviction-" + rand.String(6)
	t.Cleanup(func() {
		cg, err := cgroupmgr.New(cgroupmgr.Config{CgroupRoot: cgroupRoot})
		require.NoError(t, err)
		assert.NoError(t, cg.Destroy(cg.KubepodsCgroupName()), "QoS cgroups removable: no pod left in them")
		for _, d := range []string{"cpu", "memory", "pids"} {
			_ = os.Remove(filepath.Join("/sys/fs/cgroup", d, cgroupRoot))
		}
	})
	signals, err := eviction.NewLinuxSignals(eviction.LinuxConfig{RootDir: t.TempDir()})
	require.NoError(t, err)
	obs, err := signals.Signals(ctx)
	require.NoError(t, err)
	free := obs[eviction.SignalMemoryAvailable].Available
	require.Greater(t, free, int64(4<<30), "the test needs 4 GiB free")
	threshold := (free - 3<<29) >> 20 // MiB
	c, stop := startClusterAgent(t, ctx, hardEviction(fmt.Sprintf("memory.available<%dMi", threshold), 10*time.Second),
		func(c *nodeagent.Config) { c.CgroupRoot = cgroupRoot })
	defer stop()
	assert.Equal(t, v1.ConditionFalse, c.nodeCondition(v1.NodeMemoryPressure))

	c.create("calm", v1.PodSpec{HostNetwork: true, Containers: []v1.Container{{Name: "c", Image: "nodekit.local/testbin:1",
		ImagePullPolicy: v1.PullNever, Args: []string{"sleep"},
		Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}}}}})
	c.create("hog", v1.PodSpec{HostNetwork: true, TerminationGracePeriodSeconds: ptr.To[int64](30),
		Containers: []v1.Container{{Name: "c", Image: "nodekit.local/testbin:1", ImagePullPolicy: v1.PullNever, Args: []string{"alloc", "3072"}}}})

	poll.Eventually(t, func() bool {
		return c.nodeCondition(v1.NodeMemoryPressure) == v1.ConditionTrue
	}, 60*time.Second, 100*time.Millisecond, "MemoryPressure in the node status")
	poll.Eventually(t, func() bool { return c.get("hog").Status.Phase == v1.PodFailed }, 40*time.Second, 100*time.Millisecond, "the hog evicted")
	evicted := c.get("hog").Status
	assert.Equal(t, "Evicted", evicted.Reason)
	prefix := fmt.Sprintf("The node was low on resource: memory. Threshold quantity: %dMi, available: ", threshold)
	assert.True(t, strings.HasPrefix(evicted.Message, prefix), evicted.Message)
	assert.Regexp(t, `Container c was using \d+(Ki|Mi|Gi)?, request is 0, has larger consumption of memory. $`, evicted.Message)
	assert.Equal(t, v1.PodRunning, c.get("calm").Status.Phase, "within its request: not ranked first")
	poll.Eventually(t, func() bool {
		return c.nodeCondition(v1.NodeMemoryPressure) == v1.ConditionFalse
	}, 60*time.Second, 100*time.Millisecond, "MemoryPressure cleared")
	assert.Equal(t, v1.PodRunning, c.get("calm").Status.Phase)
}
