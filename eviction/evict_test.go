package eviction

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// evictionMessage's formats (helpers.go), and the status evictPod gives
// the pod.
func TestThresholdEvictionMessageAndStatus(t *testing.T) {
	hardMem := hard(SignalMemoryAvailable, qv("100Mi"))
	obs := Observations{SignalMemoryAvailable: {Available: 50 * Mi, Capacity: 8 * Gi}}
	pod := mkPod("p", rl("memory", "100Mi"), nil, func(p *v1.Pod) {
		p.Generation = 3
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "quiet", Resources: v1.ResourceRequirements{Requests: rl("memory", "1Gi")}})
		p.Spec.InitContainers = []v1.Container{{Name: "sidecar"}}
	})
	st := memStats("p", 300*Mi)
	st.Containers[0].Memory.WorkingSetBytes = u64(200 * Mi)
	st.Containers = append(st.Containers,
		statsapi.ContainerStats{Name: "quiet", Memory: &statsapi.MemoryStats{WorkingSetBytes: u64(50 * Mi)}},
		statsapi.ContainerStats{Name: "sidecar", Memory: &statsapi.MemoryStats{WorkingSetBytes: u64(50 * Mi)}},
		statsapi.ContainerStats{Name: "debugger", Memory: &statsapi.MemoryStats{WorkingSetBytes: u64(50 * Mi)}})

	e := thresholdEviction(pod, hardMem, v1.ResourceMemory, []Threshold{hardMem}, []int{0}, obs, &st, 30, t0)
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. " +
		"Container c was using 200Mi, request is 100Mi, has larger consumption of memory. " +
		"Container sidecar was using 50Mi, request is 0, has larger consumption of memory. "
	assert.Equal(t, want, e.Message, "containers over their request, init containers included, ephemeral ones never")
	assert.Equal(t, map[string]string{"offending_containers": "c,sidecar", "offending_containers_usage": "200Mi,50Mi",
		"starved_resource": "memory"}, e.Annotations)
	assert.Equal(t, int64(1), e.GracePeriodSeconds, "a hard threshold: immediateEvictionGracePeriodSeconds")
	assert.Equal(t, &v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, ObservedGeneration: 3,
		Reason: "TerminationByKubelet", Message: want}, e.Condition)

	status := v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}}
	e.UpdateStatus(&status)
	assert.Equal(t, v1.PodFailed, status.Phase)
	assert.Equal(t, "Evicted", status.Reason)
	assert.Equal(t, want, status.Message)
	require.Len(t, status.Conditions, 2)
	assert.Equal(t, metav1.NewTime(t0), status.Conditions[1].LastTransitionTime)
	e.Time = t0.Add(time.Minute)
	e.UpdateStatus(&status)
	require.Len(t, status.Conditions, 2, "the condition is updated, not added")
	assert.Equal(t, metav1.NewTime(t0), status.Conditions[1].LastTransitionTime, "same status: the transition time is kept")

	t.Run("percentage thresholds show the quantity of capacity in binary SI; available inodes in decimal SI", func(t *testing.T) {
		fs := hard(SignalNodeFsInodesFree, pct(0.05))
		e := thresholdEviction(pod, fs, ResourceInodes, []Threshold{fs}, []int{0},
			Observations{SignalNodeFsInodesFree: {Available: 40000, Capacity: 1000000}}, nil, 0, t0)
		assert.Equal(t, "The node was low on resource: inodes. Threshold quantity: 50000, available: 40k. ", e.Message)
		assert.Empty(t, e.Annotations, "no stats: no annotations")
		nodefs := hard(SignalNodeFsAvailable, pct(float64(float32(10)/100))) // as parsed from "10%"
		e = thresholdEviction(pod, nodefs, v1.ResourceEphemeralStorage, []Threshold{nodefs}, []int{0},
			Observations{SignalNodeFsAvailable: {Available: 5 * Gi, Capacity: 100 * Gi}}, nil, 0, t0)
		// 10% is the kubelet's float32 0.1: 10737418400 bytes.
		assert.Equal(t, "The node was low on resource: ephemeral-storage. Threshold quantity: 10737418400, available: 5Gi. ", e.Message)
	})
	t.Run("ephemeral storage: writable layer plus logs over the request", func(t *testing.T) {
		nodefs := hard(SignalNodeFsAvailable, qv("1Gi"))
		st := diskStats("p", 300*Mi, 100*Mi, nil)
		e := thresholdEviction(mkPod("p", rl("ephemeral-storage", "200Mi"), nil), nodefs, v1.ResourceEphemeralStorage, []Threshold{nodefs}, []int{0},
			Observations{SignalNodeFsAvailable: {Available: 512 * Mi, Capacity: 100 * Gi}}, &st, 0, t0)
		assert.Equal(t, "The node was low on resource: ephemeral-storage. Threshold quantity: 1Gi, available: 512Mi. "+
			"Container c was using 400Mi, request is 200Mi, has larger consumption of ephemeral-storage. ", e.Message)
	})
	t.Run("pod-level resources: the pod's usage and request", func(t *testing.T) {
		pl := mkPod("pl", nil, nil, func(p *v1.Pod) { p.Spec.Resources = &v1.ResourceRequirements{Requests: rl("memory", "1Gi")} })
		st := memStats("pl", 2*Gi)
		e := thresholdEviction(pl, hardMem, v1.ResourceMemory, []Threshold{hardMem}, []int{0}, obs, &st, 0, t0)
		assert.Equal(t, "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. "+
			"Pod pl was using 2Gi, request is 1Gi, has larger consumption of memory. "+
			"Container c was using 2Gi, request is 0, has larger consumption of memory. ", e.Message)
		assert.Equal(t, "pl", e.Annotations["offending_pod"])
		assert.Equal(t, "2Gi", e.Annotations["offending_pod_usage"])
	})
}

// The grace period the kubelet's synchronize gives: 1 s for a hard
// threshold; --eviction-max-pod-grace-period for a soft one, capped by the
// pod's terminationGracePeriodSeconds (AllowOverwriteTerminationGracePeriodSeconds
// off in v1.34).
func TestGracePeriodKubeletRules(t *testing.T) {
	soft := Threshold{Signal: SignalMemoryAvailable, Value: qv("1Gi"), GracePeriod: time.Minute}
	withTGPS := func(s int64) func(*v1.Pod) { return func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = &s } }
	for _, tc := range []struct {
		rule string
		t    Threshold
		pod  *v1.Pod
		max  int64
		want int64
	}{
		{"hard: 1 s whatever the pod asks", hard(SignalMemoryAvailable, qv("1Gi")), mkPod("p", nil, nil, withTGPS(300)), 60, 1},
		{"soft: the max pod grace period", soft, mkPod("p", nil, nil), 60, 60},
		{"soft: capped by the pod's own", soft, mkPod("p", nil, nil, withTGPS(30)), 60, 30},
		{"soft: the default max of 0 (the pod workers make it 1 s)", soft, mkPod("p", nil, nil, withTGPS(30)), 0, 0},
	} {
		assert.Equal(t, tc.want, gracePeriod(tc.t, tc.pod, tc.max), tc.rule)
	}
}

// localStorageEviction (eviction_manager.go).
func TestLocalStorageEvictionsKubeletRules(t *testing.T) {
	limit := func(s string) v1.ResourceList { return rl("ephemeral-storage", s) }
	emptyDir := func(size string) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: q(size)}}}}
		}
	}
	two := func(p *v1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "d", Resources: v1.ResourceRequirements{Limits: rl("ephemeral-storage", "1Gi")}})
	}
	for _, tc := range []struct {
		rule   string
		pod    *v1.Pod
		stats  statsapi.PodStats
		layout FsLayout
		signal string
		msg    string
	}{
		{"an emptyDir over its sizeLimit", mkPod("p", nil, nil, emptyDir("1Gi")), diskStats("p", 0, 0, map[string]int64{"cache": 2 * Gi}), SharedFs,
			SignalEmptyDirFsLimit, `Usage of EmptyDir volume "cache" exceeds the limit "1Gi". `},
		{"an emptyDir at its sizeLimit is fine", mkPod("p", nil, nil, emptyDir("1Gi")), diskStats("p", 0, 0, map[string]int64{"cache": Gi}), SharedFs, "", ""},
		{"the pod over the sum of its containers' limits", mkPod("p", nil, limit("1Gi"), two), diskStats("p", 0, 0, map[string]int64{"other": 3 * Gi}), SharedFs,
			SignalEphemeralPodFsLimit, "Pod ephemeral local storage usage exceeds the total limit of containers 2Gi. "},
		{"a container over its limit: writable layer and logs", mkPod("p", nil, limit("1Gi"), two), diskStats("p", 800*Mi, 300*Mi, nil), SharedFs,
			SignalEphemeralContainerFsLimit, `Container c exceeded its local ephemeral storage limit "1Gi". `},
		{"a container over its limit: logs only with a dedicated imagefs", mkPod("p", nil, limit("1Gi"), two), diskStats("p", 800*Mi, 300*Mi, nil), DedicatedImageFs, "", ""},
		{"a pod without limits is not checked", mkPod("p", nil, nil), diskStats("p", 100*Gi, 100*Gi, nil), SharedFs, "", ""},
		{"a critical pod is never evicted", mkPod("p", nil, nil, emptyDir("1Gi"), priority(2000001000)), diskStats("p", 0, 0, map[string]int64{"cache": 2 * Gi}), SharedFs, "", ""},
		{"a static pod is never evicted", mkPod("p", nil, nil, emptyDir("1Gi"), annotate("kubernetes.io/config.source", "file")),
			diskStats("p", 0, 0, map[string]int64{"cache": 2 * Gi}), SharedFs, "", ""},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			evs := LocalStorageEvictions([]*v1.Pod{tc.pod}, PodStatsFromSummary(&statsapi.Summary{Pods: []statsapi.PodStats{tc.stats}}), tc.layout, t0)
			if tc.signal == "" {
				assert.Empty(t, evs)
				return
			}
			require.Len(t, evs, 1)
			assert.Equal(t, Eviction{Pod: tc.pod, Signal: tc.signal, GracePeriodSeconds: 1, Message: tc.msg, Time: t0}, evs[0])
		})
	}
	t.Run("every offending pod in one pass, each for its first rule", func(t *testing.T) {
		a := mkPod("a", nil, limit("1Gi"), emptyDir("1Gi"))
		b := mkPod("b", nil, limit("1Gi"))
		evs := LocalStorageEvictions([]*v1.Pod{a, b, mkPod("c", nil, nil)}, PodStatsFromSummary(&statsapi.Summary{Pods: []statsapi.PodStats{
			diskStats("a", 2*Gi, 0, map[string]int64{"cache": 2 * Gi}), diskStats("b", 2*Gi, 0, nil), diskStats("c", 9*Gi, 0, nil)}}), SharedFs, t0)
		require.Len(t, evs, 2)
		assert.Equal(t, SignalEmptyDirFsLimit, evs[0].Signal)
		assert.Equal(t, SignalEphemeralPodFsLimit, evs[1].Signal)
	})
	t.Run("limits aggregate like requests; overhead adds to them", func(t *testing.T) {
		always := v1.ContainerRestartPolicyAlways
		p := mkPod("p", nil, limit("1G"), func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "s", RestartPolicy: &always, Resources: v1.ResourceRequirements{Limits: limit("1G")}}}
			p.Spec.Overhead = limit("500M")
		})
		l, found := podLimit(p, v1.ResourceEphemeralStorage)
		assert.True(t, found)
		assert.Equal(t, "2500M", l.String(), "kept in the limits' own format, as the kubelet's message shows it")
		_, found = podLimit(mkPod("p", nil, rl("memory", "1Gi")), v1.ResourceEphemeralStorage)
		assert.False(t, found)
	})
}
