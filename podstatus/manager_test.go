package podstatus_test

import (
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
