package podstartup_test

import (
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/podstartup"
)

var t0 = time.Unix(1700000000, 0)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// figures are what the Tracker's metrics say: each histogram's count and
// sum, and the first network pod's gauge.
type figures struct {
	totalCount, sliCount uint64
	total, sli, first    float64
}

func gather(t *testing.T, tr *podstartup.Tracker) figures {
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(tr))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var f figures
	for _, mf := range mfs {
		m := mf.GetMetric()[0]
		switch mf.GetName() {
		case "kubelet_pod_start_total_duration_seconds":
			f.totalCount, f.total = m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
		case "kubelet_pod_start_sli_duration_seconds":
			f.sliCount, f.sli = m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
		case "kubelet_first_network_pod_start_sli_duration_seconds":
			f.first = m.GetGauge().GetValue()
		}
	}
	return f
}

// step is one thing that happens to the pod "p" at a time, in seconds
// after its creation.
type step struct {
	at   float64
	what string // watch-pending, watch-running, watch-started-before, watch-unschedulable, watch-failed,
	// written-pending, written-running, pull-start, pull-end, init-start, init-end, delete
}

func TestTrackerObservesTheStartupOnTheWatch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pod   func(*v1.Pod)
		steps []step
		want  figures
	}{{
		name:  "created, written running, seen running on the watch",
		steps: []step{{0.2, "watch-pending"}, {2, "written-pending"}, {3, "written-running"}, {3.5, "watch-running"}},
		want:  figures{totalCount: 1, sliCount: 1, total: 3.5, sli: 3.5, first: 3.5},
	}, {
		name: "image pulls, overlapping, and an init container are left out of the SLI",
		steps: []step{{0.2, "watch-pending"}, {0.5, "pull-start"}, {1, "pull-start"}, {1.5, "pull-end"}, {2, "pull-end"},
			{2, "init-start"}, {3, "init-end"}, {4, "written-running"}, {5, "watch-running"}},
		want: figures{totalCount: 1, sliCount: 1, total: 5, sli: 5 - 1.5 - 1, first: 5 - 1.5 - 1},
	}, {
		name:  "observed once",
		steps: []step{{0.2, "watch-pending"}, {3, "written-running"}, {3.5, "watch-running"}, {9, "written-running"}, {10, "watch-running"}},
		want:  figures{totalCount: 1, sliCount: 1, total: 3.5, sli: 3.5, first: 3.5},
	}, {
		name:  "running on the watch before the agent's own write: not yet",
		steps: []step{{0.2, "watch-pending"}, {3, "watch-running"}},
	}, {
		name:  "the watch event of the write before its answer: observed at the watch's time once the answer is in",
		steps: []step{{0.2, "watch-pending"}, {3, "watch-running"}, {3.2, "watch-running"}, {3.5, "written-running"}, {4, "watch-running"}},
		want:  figures{totalCount: 1, sliCount: 1, total: 3, sli: 3, first: 3},
	}, {
		name: "a stateful pod: the total only",
		pod: func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/d"}}}}
		},
		steps: []step{{0.2, "watch-pending"}, {3, "written-running"}, {3.5, "watch-running"}},
		want:  figures{totalCount: 1, total: 3.5},
	}, {
		name:  "on the host network: not the first network pod",
		pod:   func(p *v1.Pod) { p.Spec.HostNetwork = true },
		steps: []step{{0.2, "watch-pending"}, {3, "written-running"}, {3.5, "watch-running"}},
		want:  figures{totalCount: 1, sliCount: 1, total: 3.5, sli: 3.5},
	}, {
		name:  "created unschedulable: never tracked",
		steps: []step{{0.2, "watch-unschedulable"}, {1, "watch-pending"}, {3, "written-running"}, {3.5, "watch-running"}},
	}, {
		name:  "started before the tracker saw it (an agent restart): not tracked",
		steps: []step{{0.2, "watch-started-before"}, {3, "written-running"}, {3.5, "watch-running"}},
	}, {
		name:  "finished before it was seen running: forgotten",
		steps: []step{{0.2, "watch-pending"}, {3, "written-running"}, {3.2, "watch-failed"}, {3.5, "watch-running"}},
	}, {
		name:  "deleted: forgotten",
		steps: []step{{0.2, "watch-pending"}, {3, "written-running"}, {3.2, "delete"}, {3.5, "watch-running"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			tr := podstartup.New(podstartup.Config{Clock: clk, Log: logr.Discard()})
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u", CreationTimestamp: metav1.NewTime(t0)},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a"}, {Name: "b"}}}}
			if tc.pod != nil {
				tc.pod(pod)
			}
			for _, s := range tc.steps {
				clk.SetTime(at(s.at))
				p := pod.DeepCopy()
				switch s.what {
				case "watch-pending", "written-pending":
					p.Status = v1.PodStatus{Phase: v1.PodPending}
					if s.what == "written-pending" {
						p.Status.StartTime = &metav1.Time{Time: at(1)}
					}
				case "watch-running", "written-running", "watch-started-before":
					started := metav1.NewTime(at(2))
					running := v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: started}}
					p.Status = v1.PodStatus{Phase: v1.PodRunning, StartTime: &started,
						ContainerStatuses: []v1.ContainerStatus{{Name: "a", State: running}, {Name: "b", State: running}}}
				case "watch-unschedulable":
					p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse}}
				case "watch-failed":
					p.Status.Phase = v1.PodFailed
				}
				switch s.what {
				case "watch-pending", "watch-running", "watch-started-before", "watch-unschedulable", "watch-failed":
					tr.ObservedPodOnWatch(p, clk.Now())
				case "written-pending", "written-running":
					tr.RecordStatusUpdated(p)
				case "pull-start":
					tr.RecordImageStartedPulling(pod.UID)
				case "pull-end":
					tr.RecordImageFinishedPulling(pod.UID)
				case "init-start":
					tr.RecordInitContainerStarted(pod.UID, clk.Now())
				case "init-end":
					tr.RecordInitContainerFinished(pod.UID, clk.Now())
				case "delete":
					tr.DeletePodStartupState(pod.UID)
				default:
					t.Fatalf("bad step %q", s.what)
				}
			}
			got := gather(t, tr)
			assert.Equal(t, tc.want.totalCount, got.totalCount, "total count")
			assert.Equal(t, tc.want.sliCount, got.sliCount, "SLI count")
			assert.InDelta(t, tc.want.total, got.total, 1e-9, "total")
			assert.InDelta(t, tc.want.sli, got.sli, 1e-9, "SLI")
			assert.InDelta(t, tc.want.first, got.first, 1e-9, "first network pod")
		})
	}
}

// The Tracker holds nothing of a pod once it is gone, unschedulable ones
// included.
func TestTrackerForgetsDeletedPods(t *testing.T) {
	tr := podstartup.New(podstartup.Config{})
	for i, cond := range []v1.ConditionStatus{v1.ConditionTrue, v1.ConditionFalse} {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: []types.UID{"a", "b"}[i]},
			Status: v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.PodScheduled, Status: cond}}}}
		tr.ObservedPodOnWatch(p, time.Now())
	}
	assert.Equal(t, 2, tr.Tracked())
	tr.DeletePodStartupState("a")
	tr.DeletePodStartupState("b")
	assert.Equal(t, 0, tr.Tracked())
}
