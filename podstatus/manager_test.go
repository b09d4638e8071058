package podstatus_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/podstatus"
)

func TestManagerKeepsTimesAndTerminalPhases(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	m := podstatus.NewManager(clk)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}}
	status := func(phase v1.PodPhase, ready v1.ConditionStatus) v1.PodStatus {
		return v1.PodStatus{Phase: phase, Conditions: []v1.PodCondition{
			{Type: v1.PodScheduled, Status: v1.ConditionTrue}, {Type: v1.PodReady, Status: ready}}}
	}
	steps := []struct {
		name        string
		set         v1.PodStatus
		wantChanged bool
		wantPhase   v1.PodPhase
		wantReadyAt time.Duration // LastTransitionTime of Ready, after t0
	}{
		{"first status: start time and transitions now", status(v1.PodPending, v1.ConditionFalse), true, v1.PodPending, 0},
		{"same again: nothing changed, times kept", status(v1.PodPending, v1.ConditionFalse), false, v1.PodPending, 0},
		{"ready: its transition time moves", status(v1.PodRunning, v1.ConditionTrue), true, v1.PodRunning, 20 * time.Second},
		{"failed", status(v1.PodFailed, v1.ConditionFalse), true, v1.PodFailed, 30 * time.Second},
		{"a terminal phase never goes back", status(v1.PodRunning, v1.ConditionFalse), false, v1.PodFailed, 30 * time.Second},
	}
	for i, s := range steps {
		clk.SetTime(t0.Add(time.Duration(i) * 10 * time.Second))
		assert.Equal(t, s.wantChanged, m.SetPodStatus(pod, s.set), s.name)
		got, ok := m.PodStatus(pod.UID)
		require.True(t, ok)
		assert.Equal(t, s.wantPhase, got.Phase, s.name)
		assert.True(t, got.StartTime.Time.Equal(t0), "%s: start time %v", s.name, got.StartTime)
		assert.True(t, got.Conditions[0].LastTransitionTime.Time.Equal(t0), "%s: PodScheduled never changed", s.name)
		assert.True(t, got.Conditions[1].LastTransitionTime.Time.Equal(t0.Add(s.wantReadyAt)), "%s: Ready changed at %v", s.name, got.Conditions[1].LastTransitionTime)
	}
	other := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: "u2"}}
	m.SetPodStatus(other, v1.PodStatus{Phase: v1.PodPending})
	pods := m.Pods()
	require.Len(t, pods, 2)
	assert.Equal(t, []string{"a", "p"}, []string{pods[0].Name, pods[1].Name})
	assert.Equal(t, v1.PodFailed, pods[1].Status.Phase)
	fresh := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: "ns", UID: "u3"}}
	of := m.PodsOf([]*v1.Pod{fresh, pod})
	assert.Equal(t, []v1.PodPhase{v1.PodPending, v1.PodFailed}, []v1.PodPhase{of[0].Status.Phase, of[1].Status.Phase},
		"a pod with no status yet is Pending")
	assert.Equal(t, v1.PodQOSBestEffort, of[0].Status.QOSClass)
	m.RemovePod(pod.UID)
	_, ok := m.PodStatus(pod.UID)
	assert.False(t, ok)

	m.SetPodStatus(fresh, v1.PodStatus{Phase: v1.PodPending})
	m.RemoveOrphans(map[types.UID]bool{fresh.UID: true})
	_, ok = m.PodStatus(other.UID)
	assert.False(t, ok, "an orphan's status is forgotten")
	_, ok = m.PodStatus(fresh.UID)
	assert.True(t, ok, "a kept pod's status stays")
}

type starts []kc.StartResult

func (s starts) StartResults() []kc.StartResult { return s }

func TestReasonCacheKeepsTheLastFailedStartUntilOneSucceeds(t *testing.T) {
	c := podstatus.NewReasonCache()
	c.Update("u", starts{{Container: "a", Reason: "ErrImagePull", Message: "no such image"}, {Container: "b", Reason: "CrashLoopBackOff"}})
	assert.Equal(t, map[string]podstatus.Failure{"a": {Reason: "ErrImagePull", Message: "no such image"}, "b": {Reason: "CrashLoopBackOff"}}, c.Get("u"))
	c.Update("u", starts{}) // a sync that started nothing keeps them
	c.Update("u", starts{{Container: "a", Reason: "ImagePullBackOff"}, {Container: "b"}})
	assert.Equal(t, map[string]podstatus.Failure{"a": {Reason: "ImagePullBackOff"}}, c.Get("u"))
	c.Update("u", nil)
	assert.Nil(t, c.Get("other"))
	c.Remove("u")
	assert.Nil(t, c.Get("u"))
}

func TestSummarize(t *testing.T) {
	s := v1.PodStatus{
		InitContainerStatuses: []v1.ContainerStatus{exited("init", 0)},
		ContainerStatuses:     []v1.ContainerStatus{running("web", true), backingOff("db", 1), {Name: "new"}},
	}
	s.ContainerStatuses[1].RestartCount = 3
	assert.Equal(t, "init=exited:0(0) web=running,ready(0) db=CrashLoopBackOff(3) new=waiting(0)", podstatus.Summarize(s))
}

// The kubelet's HandlePodReconcile gives its pod manager the newer object:
// the Manager holds it instead of the old one, its published status kept.
func TestManagerReplacePodKeepsTheStatus(t *testing.T) {
	m := podstatus.NewManager(clocktesting.NewFakeClock(t0))
	old := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}}
	m.SetPodStatus(old, v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}})
	newer := old.DeepCopy()
	newer.Status.Phase = v1.PodRunning // as the API shows it now
	m.ReplacePod(newer)
	assert.Same(t, newer, podstatus.HeldPod(m, "u"))
	status, ok := m.PodStatus("u")
	require.True(t, ok)
	assert.Equal(t, v1.PodRunning, status.Phase)

	// The status back from the API server, equal to the one published: the
	// Manager holds the pod's, not its own copy.
	back := newer.DeepCopy()
	back.Status = *podstatus.HeldStatus(m, "u").DeepCopy()
	m.ReplacePod(back)
	held := podstatus.HeldStatus(m, "u")
	require.NotEmpty(t, held.Conditions)
	assert.Same(t, &back.Status.Conditions[0], &held.Conditions[0], "one copy of the status, the pod's")
	// An API status that differs (another writer's condition) is not taken.
	other := back.DeepCopy()
	other.Status.Conditions = append(other.Status.Conditions, v1.PodCondition{Type: "example.com/gate", Status: v1.ConditionTrue})
	m.ReplacePod(other)
	assert.Same(t, other, podstatus.HeldPod(m, "u"))
	assert.Len(t, podstatus.HeldStatus(m, "u").Conditions, len(back.Status.Conditions))
	assert.False(t, m.SetPodStatus(other, *held.DeepCopy()), "the status kept is the published one")

	m.ReplacePod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "ns", UID: "unknown"}})
	assert.Nil(t, podstatus.HeldPod(m, "unknown"), "a pod without a status is not taken")
	assert.Len(t, m.Pods(), 1)
}

// The kubelet's normalizeStatus, applied by its status manager to every
// status it keeps: a status read back from the API server (times to the
// second) compares equal to the one published.
func TestManagerNormalizesAsTheKubelet(t *testing.T) {
	at := t0.Add(1234567 * time.Nanosecond)
	nano := metav1.NewTime(at)
	clk := clocktesting.NewFakeClock(at)
	m := podstatus.NewManager(clk)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}, Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "z-init"}, {Name: "a-init"}},
		Containers:     []v1.Container{{Name: "web"}, {Name: "db"}}}}
	long := strings.Repeat("x", podstatus.MaxTerminationMessageBytes)
	given := v1.PodStatus{Phase: v1.PodRunning,
		Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastProbeTime: nano}},
		InitContainerStatuses: []v1.ContainerStatus{
			{Name: "a-init", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{StartedAt: nano, FinishedAt: nano, Message: long}}},
			{Name: "z-init", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{StartedAt: nano, FinishedAt: nano}}}},
		ContainerStatuses: []v1.ContainerStatus{
			{Name: "web", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: nano}},
				LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{FinishedAt: nano, Message: long}}},
			{Name: "db", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: nano}}}}}
	snapshot := given.DeepCopy()
	m.SetPodStatus(pod, given)
	assert.Equal(t, snapshot, &given, "what the caller gave is not written through")

	got, ok := m.PodStatus("u")
	require.True(t, ok)
	second := metav1.NewTime(t0)
	isSecond := func(what string, tm metav1.Time) { assert.True(t, tm.Equal(&second), "%s: %v", what, tm) }
	isSecond("start time", *got.StartTime)
	isSecond("condition transition", got.Conditions[0].LastTransitionTime)
	isSecond("condition probe", got.Conditions[0].LastProbeTime)
	assert.Equal(t, []string{"db", "web"}, []string{got.ContainerStatuses[0].Name, got.ContainerStatuses[1].Name}, "by name")
	assert.Equal(t, []string{"z-init", "a-init"}, []string{got.InitContainerStatuses[0].Name, got.InitContainerStatuses[1].Name}, "in spec order")
	isSecond("running since", got.ContainerStatuses[1].State.Running.StartedAt)
	isSecond("last finished", got.ContainerStatuses[1].LastTerminationState.Terminated.FinishedAt)
	isSecond("init started", got.InitContainerStatuses[1].State.Terminated.StartedAt)
	isSecond("init finished", got.InitContainerStatuses[1].State.Terminated.FinishedAt)
	perContainer := podstatus.MaxTerminationMessageBytes / 4
	assert.Len(t, got.InitContainerStatuses[1].State.Terminated.Message, perContainer, "12 KiB shared by 4 containers")
	assert.Len(t, got.ContainerStatuses[1].LastTerminationState.Terminated.Message, perContainer)

	// What the API server gives back (seconds) is the same status.
	clk.Step(time.Second)
	assert.False(t, m.SetPodStatus(pod, *got.DeepCopy()), "unchanged once normalized")
}

// TestManagerObservedGeneration: status.observedGeneration follows the
// pod's generation and never goes back when an older copy syncs.
func TestManagerObservedGeneration(t *testing.T) {
	m := podstatus.NewManager(clocktesting.NewFakeClock(t0))
	for _, step := range []struct {
		generation, want int64
		changed          bool
	}{
		{generation: 1, want: 1, changed: true},
		{generation: 1, want: 1, changed: false},
		{generation: 3, want: 3, changed: true},
		{generation: 2, want: 3, changed: false},
		{generation: 0, want: 3, changed: false},
	} {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u", Generation: step.generation}}
		assert.Equal(t, step.changed, m.SetPodStatus(pod, v1.PodStatus{Phase: v1.PodRunning}), "generation %d", step.generation)
		got, ok := m.PodStatus(pod.UID)
		require.True(t, ok)
		assert.Equal(t, step.want, got.ObservedGeneration, "generation %d", step.generation)
	}
}
