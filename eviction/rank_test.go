package eviction

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func rank(signal string, layout FsLayout, pods []*v1.Pod, stats ...statsapi.PodStats) []string {
	Rank(signal, pods, PodStatsFromSummary(&statsapi.Summary{Pods: stats}), layout)
	return names(pods)
}

// rankMemoryPressure: orderedBy(exceedMemoryRequests, priority, memory).
func TestRankMemoryKubeletRules(t *testing.T) {
	mem := rl("memory", "100Mi")
	t.Run("pods over their memory request first, whatever their priority", func(t *testing.T) {
		assert.Equal(t, []string{"over-high", "under-low"}, rank(SignalMemoryAvailable, SharedFs,
			[]*v1.Pod{mkPod("under-low", mem, nil, priority(-10)), mkPod("over-high", mem, nil, priority(1000))},
			memStats("under-low", 90*Mi), memStats("over-high", 101*Mi)))
	})
	t.Run("then the lowest priority first", func(t *testing.T) {
		assert.Equal(t, []string{"low", "mid", "high"}, rank(SignalMemoryAvailable, SharedFs,
			[]*v1.Pod{mkPod("high", nil, nil, priority(100)), mkPod("low", nil, nil, priority(-5)), mkPod("mid", nil, nil)},
			memStats("high", 500*Mi), memStats("low", 10*Mi), memStats("mid", 20*Mi)))
	})
	t.Run("then the largest usage above the request first", func(t *testing.T) {
		assert.Equal(t, []string{"b", "a", "c"}, rank(SignalMemoryAvailable, SharedFs,
			[]*v1.Pod{mkPod("a", mem, nil), mkPod("b", rl("memory", "1Mi"), nil), mkPod("c", nil, nil)},
			memStats("a", 300*Mi), memStats("b", 250*Mi), memStats("c", 150*Mi)))
	})
	t.Run("pods without stats first; equal pods keep their order", func(t *testing.T) {
		assert.Equal(t, []string{"nostats", "x", "y"}, rank(SignalAllocatableMemoryAvailable, SharedFs,
			[]*v1.Pod{mkPod("x", nil, nil), mkPod("y", nil, nil), mkPod("nostats", nil, nil, priority(1000))},
			memStats("x", 10*Mi), memStats("y", 10*Mi)))
	})
	t.Run("the request counts init containers and sidecars as the scheduler does", func(t *testing.T) {
		always := v1.ContainerRestartPolicyAlways
		// The container 100Mi and the sidecar 100Mi run together: 200Mi. The init container runs before the
		// sidecar starts: 300Mi alone. The request is the larger, 300Mi.
		withInit := mkPod("init", mem, nil, func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{
				{Name: "i", Resources: v1.ResourceRequirements{Requests: rl("memory", "300Mi")}},
				{Name: "s", RestartPolicy: &always, Resources: v1.ResourceRequirements{Requests: mem}}}
		})
		plain := mkPod("plain", rl("memory", "250Mi"), nil)
		assert.Equal(t, int64(300*Mi), podRequest(withInit, v1.ResourceMemory))
		// Both use 290Mi: only plain is over its request.
		assert.Equal(t, []string{"plain", "init"}, rank(SignalMemoryAvailable, SharedFs, []*v1.Pod{withInit, plain},
			memStats("init", 290*Mi), memStats("plain", 290*Mi)))
	})
	t.Run("a pod-level memory request replaces the containers'; overhead adds to a non-zero request", func(t *testing.T) {
		podLevel := mkPod("pl", mem, nil, func(p *v1.Pod) {
			p.Spec.Resources = &v1.ResourceRequirements{Requests: rl("memory", "1Gi")}
			p.Spec.Overhead = rl("memory", "10Mi", "ephemeral-storage", "1Gi")
		})
		assert.Equal(t, int64(Gi+10*Mi), podRequest(podLevel, v1.ResourceMemory))
		assert.Equal(t, int64(0), podRequest(podLevel, v1.ResourceEphemeralStorage), "pod-level resources: no container-level ephemeral-storage")
		assert.Equal(t, int64(0), podRequest(mkPod("be", nil, nil, func(p *v1.Pod) { p.Spec.Overhead = rl("memory", "10Mi") }), v1.ResourceMemory))
	})
}

// rankPIDPressure: orderedBy(priority, process).
func TestRankPIDKubeletRules(t *testing.T) {
	procs := func(uid string, n int64) statsapi.PodStats {
		return statsapi.PodStats{PodRef: statsapi.PodReference{UID: uid}, ProcessStats: &statsapi.ProcessStats{ProcessCount: u64(n)}}
	}
	assert.Equal(t, []string{"low", "nostats", "many", "few"}, rank(SignalPIDAvailable, SharedFs,
		[]*v1.Pod{mkPod("few", nil, nil), mkPod("many", nil, nil), mkPod("low", nil, nil, priority(-1)), mkPod("nostats", nil, nil)},
		procs("few", 3), procs("many", 300), procs("low", 1)), "priority first, then pods without stats, then the most processes")
}

// rankDiskPressureFunc with the fs stats buildSignalToRankFunc picks.
func TestRankDiskKubeletRules(t *testing.T) {
	vols := func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{
			{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			{Name: "ram", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}},
			{Name: "secret", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{}}},
			{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{}}},
		}
	}
	// rootfs-heavy: 5Gi writable layer; logs-heavy: 3Gi logs; vol-heavy: 2Gi emptyDir + 2Gi hostPath (+ memory and
	// secret volumes, which do not count).
	pods := func() []*v1.Pod {
		return []*v1.Pod{mkPod("rootfs", nil, nil), mkPod("logs", nil, nil), mkPod("vols", nil, nil, vols)}
	}
	stats := []statsapi.PodStats{diskStats("rootfs", 5*Gi, 0, nil), diskStats("logs", 0, 3*Gi, nil),
		diskStats("vols", 0, 0, map[string]int64{"scratch": 2 * Gi, "host": 2 * Gi, "ram": 10 * Gi, "secret": 10 * Gi})}
	for _, tc := range []struct {
		rule   string
		signal string
		layout FsLayout
		want   []string
	}{
		{"one filesystem: writable layers, logs and local volumes", SignalNodeFsAvailable, SharedFs, []string{"rootfs", "vols", "logs"}},
		{"one filesystem: imagefs ranks as nodefs", SignalImageFsAvailable, SharedFs, []string{"rootfs", "vols", "logs"}},
		{"dedicated imagefs: nodefs counts logs and local volumes", SignalNodeFsAvailable, DedicatedImageFs, []string{"vols", "logs", "rootfs"}},
		{"dedicated imagefs: imagefs counts writable layers", SignalImageFsAvailable, DedicatedImageFs, []string{"rootfs", "logs", "vols"}},
		{"dedicated imagefs: containerfs ranks as imagefs", SignalContainerFsAvailable, DedicatedImageFs, []string{"rootfs", "logs", "vols"}},
		{"split imagefs: nodefs counts all a pod writes", SignalNodeFsAvailable, SplitImageFs, []string{"rootfs", "vols", "logs"}},
		{"split imagefs: imagefs holds only images, no pod is ahead", SignalImageFsAvailable, SplitImageFs, []string{"rootfs", "logs", "vols"}},
		{"inodes rank by inodes", SignalNodeFsInodesFree, SharedFs, []string{"rootfs", "vols", "logs"}},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			assert.Equal(t, tc.want, rank(tc.signal, tc.layout, pods(), stats...))
		})
	}
	t.Run("over the ephemeral-storage request first, then priority, then usage above the request", func(t *testing.T) {
		assert.Equal(t, []string{"over", "low", "big", "small"}, rank(SignalNodeFsAvailable, SharedFs, []*v1.Pod{
			mkPod("small", rl("ephemeral-storage", "10Gi"), nil), mkPod("big", rl("ephemeral-storage", "10Gi"), nil),
			mkPod("low", rl("ephemeral-storage", "10Gi"), nil, priority(-1)), mkPod("over", rl("ephemeral-storage", "1Gi"), nil, priority(10)),
		}, diskStats("small", Gi, 0, nil), diskStats("big", 5*Gi, 0, nil), diskStats("low", Gi, 0, nil), diskStats("over", 2*Gi, 0, nil)))
	})
}
