package allocation_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit-dev/nodekit/allocation"
)

type recorder struct{ reasons, messages []string }

func (r *recorder) Eventf(_ apiruntime.Object, _, reason, format string, args ...any) {
	r.reasons = append(r.reasons, reason)
	if len(args) > 0 {
		r.messages = append(r.messages, args[0].(string))
	}
}

func pod(uid types.UID, generation int64, cpu string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: string(uid), Namespace: "ns", UID: uid, Generation: generation},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}}}
}

// fitBelow fits a pod whose cpu request is at most max millicores.
func fitBelow(max *int64, reason string) allocation.FitFunc {
	return func(p *v1.Pod, _ []*v1.Pod) (bool, string, string) {
		if p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() <= *max {
			return true, "", ""
		}
		return false, reason, "Node didn't have enough resource: cpu"
	}
}

func cpuOf(p *v1.Pod) string {
	q := p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU]
	return q.String()
}

func conditionReasons(m *allocation.Manager, uid types.UID) map[v1.PodConditionType]string {
	out := map[v1.PodConditionType]string{}
	for _, c := range m.Conditions(uid) {
		out[c.Type] = c.Reason
	}
	return out
}

func TestResizeAllocatedDeferredAndRetried(t *testing.T) {
	limit := int64(500)
	rec := &recorder{}
	m, err := allocation.New(allocation.Config{Fit: fitBelow(&limit, "OutOfcpu"), Recorder: rec})
	require.NoError(t, err)
	p1 := pod("u1", 1, "100m")
	assert.Equal(t, "100m", cpuOf(m.AddPod(p1)))

	// Within the node: allocated at once, in progress until synced.
	up := pod("u1", 2, "200m")
	allocated, differs := m.AllocatedPod(up)
	require.True(t, differs)
	assert.Equal(t, "100m", cpuOf(allocated), "the allocation, not the spec, until decided")
	assert.True(t, m.HandleResize(up, []*v1.Pod{p1}))
	allocated, differs = m.AllocatedPod(up)
	assert.False(t, differs)
	assert.Equal(t, "200m", cpuOf(allocated))
	assert.Equal(t, map[v1.PodConditionType]string{v1.PodResizeInProgress: ""}, conditionReasons(m, "u1"))
	assert.Equal(t, int64(2), m.Conditions("u1")[0].ObservedGeneration)
	m.SyncDone(allocated, true, errors.New("runc: EBUSY"))
	assert.Equal(t, map[v1.PodConditionType]string{v1.PodResizeInProgress: v1.PodReasonError}, conditionReasons(m, "u1"))
	m.SyncDone(allocated, false, nil)
	assert.Empty(t, m.Conditions("u1"), "complete: no condition left")
	assert.Equal(t, []string{allocation.EventResizeStarted, allocation.EventResizeError, allocation.EventResizeCompleted}, rec.reasons)
	assert.Contains(t, rec.messages[0], `Pod resize started: {"containers":[{"name":"c","resources":{"requests":{"cpu":"200m"}}}],"generation":2}`)

	// Beyond what is free: deferred, then retried once there is room.
	big := pod("u1", 3, "800m")
	assert.False(t, m.HandleResize(big, nil))
	assert.Equal(t, map[v1.PodConditionType]string{v1.PodResizePending: v1.PodReasonDeferred}, conditionReasons(m, "u1"))
	allocated, _ = m.AllocatedPod(big)
	assert.Equal(t, "200m", cpuOf(allocated))
	lookup := func(types.UID) (*v1.Pod, bool) { return big, true }
	assert.Empty(t, m.RetryPending(lookup, nil), "still no room")
	limit = 1000
	assert.Equal(t, []*v1.Pod{big}, m.RetryPending(lookup, nil))
	assert.Equal(t, map[v1.PodConditionType]string{v1.PodResizeInProgress: ""}, conditionReasons(m, "u1"))
	assert.Empty(t, m.RetryPending(lookup, nil), "nothing pending any more")

	// Asked back to the allocation: a pending resize is dropped.
	limit = 0
	assert.False(t, m.HandleResize(pod("u1", 4, "900m"), nil))
	assert.Contains(t, conditionReasons(m, "u1"), v1.PodResizePending)
	assert.False(t, m.HandleResize(pod("u1", 5, "800m"), nil))
	assert.NotContains(t, conditionReasons(m, "u1"), v1.PodResizePending)
}

func TestResizeInfeasibleIsNotRetried(t *testing.T) {
	limit := int64(0)
	m, err := allocation.New(allocation.Config{Fit: fitBelow(&limit, v1.PodReasonInfeasible)})
	require.NoError(t, err)
	m.AddPod(pod("u", 1, "100m"))
	big := pod("u", 2, "200m")
	assert.False(t, m.HandleResize(big, nil))
	assert.Equal(t, map[v1.PodConditionType]string{v1.PodResizePending: v1.PodReasonInfeasible}, conditionReasons(m, "u"))
	limit = 1000
	assert.Empty(t, m.RetryPending(func(types.UID) (*v1.Pod, bool) { return big, true }, nil))
}

// TestCheckpoints: allocations and actuated resources outlive the
// Manager; an unreadable checkpoint starts empty.
func TestCheckpoints(t *testing.T) {
	dir := t.TempDir()
	fit := func(*v1.Pod, []*v1.Pod) (bool, string, string) { return true, "", "" }
	m, err := allocation.New(allocation.Config{StateDir: dir, Fit: fit})
	require.NoError(t, err)
	m.AddPod(pod("u", 1, "100m"))
	require.True(t, m.HandleResize(pod("u", 2, "300m"), nil))
	require.NoError(t, m.SetActuated("u", "c", v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}}))

	again, err := allocation.New(allocation.Config{StateDir: dir, Fit: fit})
	require.NoError(t, err)
	assert.Equal(t, "300m", cpuOf(again.AddPod(pod("u", 1, "100m"))), "the checkpoint is the truth after a restart")
	act, ok := again.Actuated("u", "c")
	require.True(t, ok)
	assert.Equal(t, "64Mi", act.Limits.Memory().String())

	again.RemoveOrphans(func(types.UID) bool { return false })
	third, err := allocation.New(allocation.Config{StateDir: dir, Fit: fit})
	require.NoError(t, err)
	_, ok = third.Actuated("u", "c")
	assert.False(t, ok, "forgotten pods leave the checkpoint")

	require.NoError(t, os.WriteFile(filepath.Join(dir, allocation.AllocatedStateFile), []byte("{not json"), 0o600))
	broken, err := allocation.New(allocation.Config{StateDir: dir, Fit: fit})
	require.NoError(t, err)
	assert.Equal(t, "100m", cpuOf(broken.AddPod(pod("u", 1, "100m"))))
}

func TestNewNeedsFit(t *testing.T) {
	_, err := allocation.New(allocation.Config{})
	assert.ErrorContains(t, err, "Config.Fit is required")
}

// TestBackfillAfterRestart: a new Manager (the agent restarted) keeps the
// checkpointed allocation, takes the resize conditions from the API
// status, and decides the resize asked meanwhile at the next retry.
func TestBackfillAfterRestart(t *testing.T) {
	dir := t.TempDir()
	fit := func(*v1.Pod, []*v1.Pod) (bool, string, string) { return true, "", "" }
	m, err := allocation.New(allocation.Config{StateDir: dir, Fit: fit})
	require.NoError(t, err)
	m.AddPod(pod("u", 1, "100m"))

	restarted, err := allocation.New(allocation.Config{StateDir: dir, Fit: fit})
	require.NoError(t, err)
	resized := pod("u", 2, "200m")
	resized.Status.Conditions = []v1.PodCondition{{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: v1.PodReasonDeferred}}
	assert.Equal(t, "100m", cpuOf(restarted.AddPod(resized)), "the checkpoint, not the spec")
	restarted.Backfill(resized)
	assert.Equal(t, map[v1.PodConditionType]string{v1.PodResizePending: v1.PodReasonDeferred}, conditionReasons(restarted, "u"))
	assert.Equal(t, []*v1.Pod{resized}, restarted.RetryPending(func(types.UID) (*v1.Pod, bool) { return resized, true }, nil))
	assert.Equal(t, map[v1.PodConditionType]string{v1.PodResizeInProgress: ""}, conditionReasons(restarted, "u"))
}
