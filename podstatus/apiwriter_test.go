package podstatus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/podstatus"
)

// syncEnv is an APIWriter between a Manager and a fakeAPI, on a fake clock,
// without jitter: back-off 1s doubling up to 8s.
type syncEnv struct {
	t        *testing.T
	clock    *clocktesting.FakeClock
	api      *fakeAPI
	statuses *podstatus.Manager
	writer   *podstatus.APIWriter
}

func newSyncEnv(t *testing.T, cfg podstatus.APIWriterConfig, pods ...*v1.Pod) *syncEnv {
	e := &syncEnv{t: t, clock: clocktesting.NewFakeClock(t0), api: newFakeAPI(pods...)}
	e.statuses = podstatus.NewManager(e.clock)
	cfg.API, cfg.Statuses, cfg.Clock = e.api, e.statuses, e.clock
	cfg.BackOff, cfg.MaxBackOff = time.Second, 8*time.Second
	cfg.Jitter = func(d time.Duration) time.Duration { return d }
	s, err := podstatus.NewAPIWriter(cfg)
	require.NoError(t, err)
	e.writer = s
	return e
}

// sync runs a batch and returns the API calls it made.
func (e *syncEnv) sync() []string {
	e.writer.Sync(context.Background())
	return e.api.takeCalls()
}

// apiPod is a pod of the API server with one container, web, under
// restartPolicy Always.
func apiPod(uid, name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid)},
		Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways, Containers: []v1.Container{{Name: "web"}}}}
}

// statusOf web: running, ready or not.
func statusOf(ready bool) v1.PodStatus {
	r := v1.ConditionStatus("False")
	if ready {
		r = "True"
	}
	return v1.PodStatus{Phase: v1.PodRunning,
		Conditions:        []v1.PodCondition{{Type: v1.PodReady, Status: r}, {Type: v1.ContainersReady, Status: r}, {Type: v1.PodScheduled, Status: "True"}},
		ContainerStatuses: []v1.ContainerStatus{running("web", ready)}}
}

func withPhase(s v1.PodStatus, phase v1.PodPhase) v1.PodStatus {
	s.Phase = phase
	return s
}

func readyOf(s v1.PodStatus) v1.ConditionStatus {
	for _, c := range s.Conditions {
		if c.Type == v1.PodReady {
			return c.Status
		}
	}
	return ""
}

func TestAPIWriterPatchesOnlyWhatChanged(t *testing.T) {
	pod := apiPod("u1", "web")
	e := newSyncEnv(t, podstatus.APIWriterConfig{}, pod)
	steps := []struct {
		name      string
		publish   []v1.PodStatus
		want      []string
		wantReady v1.ConditionStatus
	}{
		{"first status: patched, no read first", []v1.PodStatus{statusOf(false)}, []string{"patch ns/web"}, "False"},
		{"nothing new: no call", nil, nil, "False"},
		{"the same status again: no call", []v1.PodStatus{statusOf(false)}, nil, "False"},
		{"ready: patched, against the last answer", []v1.PodStatus{statusOf(true)}, []string{"patch ns/web"}, "True"},
		{"unready and ready again before a sync: the same as written, no call",
			[]v1.PodStatus{statusOf(false), statusOf(true)}, nil, "True"},
	}
	for i, s := range steps {
		e.clock.SetTime(t0.Add(time.Duration(i) * time.Minute))
		for _, st := range s.publish {
			e.statuses.SetPodStatus(pod, st)
		}
		assert.Equal(t, s.want, e.sync(), s.name)
		got := e.api.get("ns", "web").Status
		assert.Equal(t, s.wantReady, readyOf(got), s.name)
		assert.True(t, got.StartTime.Time.Equal(t0), "%s: start time %v", s.name, got.StartTime)
	}
	require.Len(t, e.api.patches, 2)
	var patch struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
		Status   map[string]any    `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(e.api.patches[1]), &patch))
	assert.Equal(t, types.UID("u1"), patch.Metadata.UID, "the UID is the patch's precondition")
	assert.NotContains(t, patch.Status, "startTime", "only what changed is sent")
	assert.Contains(t, patch.Status, "conditions")
}

// The watch lags behind the writer's own patches: the base of the next
// patch is the API server's answer, else an unready pod would stay ready.
func TestAPIWriterPatchesAgainstItsLastAnswer(t *testing.T) {
	pod := apiPod("u1", "web")
	e := newSyncEnv(t, podstatus.APIWriterConfig{}, pod)
	e.statuses.SetPodStatus(pod, statusOf(false))
	require.Equal(t, []string{"patch ns/web"}, e.sync())
	unready := e.api.get("ns", "web") // the watch delivers the unready pod
	e.statuses.SetPodStatus(unready, statusOf(true))
	require.Equal(t, []string{"patch ns/web"}, e.sync())
	require.Equal(t, v1.ConditionTrue, readyOf(e.api.get("ns", "web").Status))

	e.statuses.SetPodStatus(unready, statusOf(false)) // before the watch delivers the ready pod
	assert.Equal(t, []string{"patch ns/web"}, e.sync())
	assert.Equal(t, v1.ConditionFalse, readyOf(e.api.get("ns", "web").Status))
}

func TestAPIWriterMergesWithTheAPIStatus(t *testing.T) {
	earlier := metav1.NewTime(t0.Add(-time.Hour))
	for _, tc := range []struct {
		name    string
		pod     *v1.Pod
		api     v1.PodStatus
		publish v1.PodStatus
		check   func(t *testing.T, got v1.PodStatus)
	}{
		{"a terminal phase is never reverted", apiPod("u1", "web"), withPhase(statusOf(false), v1.PodFailed), statusOf(true),
			func(t *testing.T, got v1.PodStatus) {
				assert.Equal(t, v1.PodFailed, got.Phase)
				assert.Equal(t, v1.ConditionFalse, readyOf(got), "a terminal pod is not ready")
			}},
		{"Succeeded stays", apiPod("u1", "web"), withPhase(statusOf(false), v1.PodSucceeded), withPhase(statusOf(false), v1.PodPending),
			func(t *testing.T, got v1.PodStatus) { assert.Equal(t, v1.PodSucceeded, got.Phase) }},
		{"failed: not ready", apiPod("u1", "web"), statusOf(true), withPhase(statusOf(true), v1.PodFailed),
			func(t *testing.T, got v1.PodStatus) {
				assert.Equal(t, v1.PodFailed, got.Phase)
				assert.Equal(t, v1.ConditionFalse, readyOf(got))
				assert.Equal(t, podstatus.ReasonPodFailed, got.Conditions[0].Reason)
			}},
		{"start time and unchanged conditions' transition times are the API's", apiPod("u1", "web"),
			func() v1.PodStatus {
				s := statusOf(true)
				s.StartTime = &earlier
				s.Conditions[0].LastTransitionTime = earlier
				s.ContainerStatuses = nil // something to patch
				return s
			}(), statusOf(true),
			func(t *testing.T, got v1.PodStatus) {
				assert.True(t, got.StartTime.Equal(&earlier), "start time %v", got.StartTime)
				assert.True(t, got.Conditions[0].LastTransitionTime.Equal(&earlier))
			}},
		{"conditions of other writers are kept", apiPod("u1", "web"),
			v1.PodStatus{Conditions: []v1.PodCondition{{Type: "example.com/gate", Status: "True"}}}, statusOf(true),
			func(t *testing.T, got v1.PodStatus) {
				require.Len(t, got.Conditions, 4)
				assert.Equal(t, v1.PodConditionType("example.com/gate"), got.Conditions[0].Type)
			}},
		{"an eviction's DisruptionTarget goes with the move to a terminal phase", apiPod("u1", "web"),
			v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.DisruptionTarget, Status: "False", Reason: "Other"}}},
			func() v1.PodStatus {
				s := withPhase(statusOf(false), v1.PodFailed)
				s.Conditions = append(s.Conditions, v1.PodCondition{Type: v1.DisruptionTarget, Status: "True", Reason: "TerminationByKubelet"})
				return s
			}(),
			func(t *testing.T, got v1.PodStatus) {
				var reasons []string
				for _, c := range got.Conditions {
					if c.Type == v1.DisruptionTarget {
						reasons = append(reasons, string(c.Status)+" "+c.Reason)
					}
				}
				assert.Equal(t, []string{"True TerminationByKubelet"}, reasons, "replaced, once")
			}},
		{"once terminal, the API's DisruptionTarget stays", apiPod("u1", "web"),
			v1.PodStatus{Phase: v1.PodFailed, Conditions: []v1.PodCondition{{Type: v1.DisruptionTarget, Status: "True", Reason: "EvictionByEvictionAPI"}}},
			func() v1.PodStatus {
				s := withPhase(statusOf(false), v1.PodFailed)
				s.Conditions = append(s.Conditions, v1.PodCondition{Type: v1.DisruptionTarget, Status: "True", Reason: "TerminationByKubelet"})
				return s
			}(),
			func(t *testing.T, got v1.PodStatus) {
				assert.Equal(t, v1.PodConditionType(v1.DisruptionTarget), got.Conditions[0].Type)
				assert.Equal(t, "EvictionByEvictionAPI", got.Conditions[0].Reason)
				assert.Len(t, got.Conditions, 4)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.pod.DeepCopy()
			p.Status = tc.api
			e := newSyncEnv(t, podstatus.APIWriterConfig{}, p)
			e.statuses.SetPodStatus(p, tc.publish) // the source's copy shows the API status
			assert.Equal(t, []string{"patch ns/" + p.Name}, e.sync())
			tc.check(t, e.api.get("ns", p.Name).Status)
		})
	}
}

// Under Never a terminated container stays terminated. The Manager refuses
// a status that says otherwise of the pod it holds; a status published
// over a source's copy from before the container ended, the API's copy
// arriving after, is merged with that copy by the writer, which keeps the
// container terminated.
func TestAPIWriterKeepsATerminatedContainerTerminated(t *testing.T) {
	never := apiPod("u1", "job")
	never.Spec.RestartPolicy = v1.RestartPolicyNever
	never.Spec.Containers = append(never.Spec.Containers, v1.Container{Name: "db"})
	api := never.DeepCopy()
	api.Status = v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{running("web", true), exited("db", 1)}}
	e := newSyncEnv(t, podstatus.APIWriterConfig{}, api)
	publish := v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{running("web", true), waiting("db", "ContainerCreating")}}
	assert.False(t, e.statuses.SetPodStatus(api, publish), "refused: the source's copy shows db terminated")
	assert.Empty(t, e.sync())

	e = newSyncEnv(t, podstatus.APIWriterConfig{}, api)
	require.True(t, e.statuses.SetPodStatus(never, publish), "a source's copy from before db ended")
	e.statuses.ReplacePod(api) // then the API's copy
	assert.Equal(t, []string{"patch ns/job"}, e.sync())
	got := e.api.get("ns", "job").Status
	require.Len(t, got.ContainerStatuses, 2)
	db := got.ContainerStatuses[0] // by name, as the kubelet's normalizeStatus sorts them
	require.Equal(t, "db", db.Name)
	require.NotNil(t, db.State.Terminated)
	assert.Equal(t, int32(1), db.State.Terminated.ExitCode)
}

func TestAPIWriterRetriesWithBackOffWithoutBlockingOthers(t *testing.T) {
	a, b := apiPod("a", "a"), apiPod("b", "b")
	e := newSyncEnv(t, podstatus.APIWriterConfig{}, a, b)
	e.statuses.SetPodStatus(a, statusOf(false))
	e.api.failNextCalls(3)
	steps := []struct {
		at      time.Duration
		publish *v1.Pod
		want    []string
	}{
		{0, nil, []string{"patch ns/a"}},                    // fails: retried after 1s, reading first
		{500 * time.Millisecond, b, []string{"patch ns/b"}}, // a waits; b is tried, fails: retried at 1.5s
		{time.Second, nil, []string{"get ns/a"}},            // a fails again: retried after 2s, at 3s
		{1500 * time.Millisecond, nil, []string{"get ns/b", "patch ns/b"}},
		{2 * time.Second, nil, nil}, // a waits
		{3 * time.Second, nil, []string{"get ns/a", "patch ns/a"}},
		{time.Minute, nil, nil},
	}
	for _, s := range steps {
		e.clock.SetTime(t0.Add(s.at))
		if s.publish != nil {
			e.statuses.SetPodStatus(s.publish, statusOf(true))
		}
		assert.Equal(t, s.want, e.sync(), "at %v", s.at)
	}
}

func TestAPIWriterFlushesTheNewestStatusesAfterAnOutage(t *testing.T) {
	pods := []*v1.Pod{apiPod("a", "a"), apiPod("b", "b"), apiPod("c", "c")}
	e := newSyncEnv(t, podstatus.APIWriterConfig{}, pods...)
	e.api.setDown(true)
	// A minute of outage: statuses change, every pod is tried at each
	// end of its back-off (1, 2, 4, then every 8s).
	tries := 0
	for at := time.Duration(0); at < time.Minute; at += time.Second {
		e.clock.SetTime(t0.Add(at))
		for i, p := range pods {
			e.statuses.SetPodStatus(p, statusOf((int(at/time.Second)+i)%2 == 0))
		}
		tries += len(e.sync())
	}
	assert.Equal(t, 3*10, tries, "tried at 0, 1, 3, 7, 15, 23, 31, 39, 47, 55s")
	e.api.setDown(false)
	e.clock.SetTime(t0.Add(time.Minute))
	assert.Empty(t, e.sync(), "still backing off")
	e.clock.SetTime(t0.Add(time.Minute + 3*time.Second))
	assert.ElementsMatch(t, []string{"get ns/a", "patch ns/a", "get ns/b", "patch ns/b", "get ns/c", "patch ns/c"}, e.sync())
	for _, p := range pods {
		want, _ := e.statuses.PodStatus(p.UID)
		assert.Equal(t, readyOf(want), readyOf(e.api.get("ns", p.Name).Status), p.Name)
	}
	assert.Empty(t, e.sync())
}

func TestAPIWriterDeletesTerminatedPods(t *testing.T) {
	deleted := func(p *v1.Pod) *v1.Pod {
		p = p.DeepCopy()
		now := metav1.NewTime(t0)
		p.DeletionTimestamp = &now
		return p
	}
	stopped := v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{exited("web", 143)},
		Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: "True"}}}
	static := func(*v1.Pod) (*v1.Pod, bool) { return deleted(apiPod("mirror", "web")), true }
	for _, tc := range []struct {
		name      string
		pod       *v1.Pod // published and in the API
		mirror    func(*v1.Pod) (*v1.Pod, bool)
		publish   v1.PodStatus
		want      []string
		wantPhase v1.PodPhase // in the API before any deletion
	}{
		{"terminal and deleted: deleted", deleted(apiPod("u1", "web")), nil, withPhase(statusOf(false), v1.PodSucceeded),
			[]string{"patch ns/web", "delete ns/web"}, v1.PodSucceeded},
		{"deleted, still running: kept", deleted(apiPod("u1", "web")), nil, statusOf(true),
			[]string{"patch ns/web"}, v1.PodRunning},
		{"deleted, stopped, not yet published terminal: kept (a container may be starting)", deleted(apiPod("u1", "web")), nil, stopped,
			[]string{"patch ns/web"}, v1.PodRunning},
		{"terminal, not deleted: kept", apiPod("u1", "web"), nil, withPhase(statusOf(false), v1.PodFailed),
			[]string{"patch ns/web"}, v1.PodFailed},
		{"a mirror pod is never deleted", deleted(apiPod("mirror", "web")), static, withPhase(statusOf(false), v1.PodFailed),
			[]string{"patch ns/web"}, v1.PodFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newSyncEnv(t, podstatus.APIWriterConfig{MirrorPodFor: tc.mirror}, tc.pod)
			pub := tc.pod.DeepCopy()
			pub.UID = "u1" // a mirror pod's static pod has its own
			e.statuses.SetPodStatus(pub, tc.publish)
			calls := e.sync()
			assert.Equal(t, tc.want, calls)
			last := e.api.get("ns", "web")
			if calls[len(calls)-1] == "delete ns/web" {
				assert.Nil(t, last, "deleted")
				require.Len(t, e.api.patches, 1)
				assert.Contains(t, e.api.patches[0], `"phase":"`+string(tc.wantPhase)+`"`, "terminal before it is deleted")
				assert.Contains(t, e.api.patches[0], `"status":"False"`, "and not ready")
			} else {
				assert.Equal(t, tc.wantPhase, last.Status.Phase)
			}
			assert.Empty(t, e.sync(), "nothing more")
		})
	}
}

func TestAPIWriterRetriesFailedPatchesAndDeletes(t *testing.T) {
	now := metav1.NewTime(t0)
	deleted := apiPod("u1", "web")
	deleted.DeletionTimestamp = &now
	succeeded := withPhase(statusOf(false), v1.PodSucceeded)
	for _, tc := range []struct {
		name  string
		inAPI *v1.Pod
		steps [][]string // calls at 0, 1s, 3s
	}{
		{"patch, then delete fail once", deleted,
			[][]string{{"patch ns/web"}, {"get ns/web", "patch ns/web", "delete ns/web"}, {"delete ns/web"}}},
		{"deletion asked of the node, not of the API: not deleted", apiPod("u1", "web"),
			[][]string{{"patch ns/web"}, {"get ns/web", "patch ns/web"}, nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newSyncEnv(t, podstatus.APIWriterConfig{}, tc.inAPI)
			e.api.failVerb = map[string]int{"patch": 1, "delete": 1}
			e.statuses.SetPodStatus(deleted, succeeded)
			for i, want := range tc.steps {
				e.clock.SetTime(t0.Add([]time.Duration{0, time.Second, 3 * time.Second}[i]))
				assert.Equal(t, want, e.sync(), "step %d", i)
			}
			if tc.inAPI.DeletionTimestamp != nil {
				assert.Nil(t, e.api.get("ns", "web"), "deleted")
				e.clock.SetTime(t0.Add(time.Hour))
				assert.Empty(t, e.sync())
			}
		})
	}
}

func TestAPIWriterForgetsPodsGoneFromTheAPI(t *testing.T) {
	pod := apiPod("u1", "web")
	e := newSyncEnv(t, podstatus.APIWriterConfig{})
	e.statuses.SetPodStatus(pod, statusOf(false))
	assert.Equal(t, []string{"patch ns/web"}, e.sync(), "not found")
	e.statuses.SetPodStatus(pod, statusOf(true))
	assert.Empty(t, e.sync(), "forgotten: nothing more is written")

	e.api.put(apiPod("u2", "web")) // another pod of that name
	e.statuses.RemovePod(pod.UID)
	assert.Empty(t, e.sync())
	e.statuses.SetPodStatus(pod, statusOf(true))
	assert.Equal(t, []string{"patch ns/web", "get ns/web"}, e.sync(),
		"u1 again, a new record: the patch's UID precondition fails, a read says the API pod is another")
	assert.Empty(t, e.api.patches, "the patch would not have gone to u2 either (UID precondition)")

	e.statuses.RemovePod(pod.UID)
	e.sync()
	e.api.put(pod)
	e.statuses.SetPodStatus(pod, statusOf(true))
	assert.Equal(t, []string{"patch ns/web"}, e.sync(), "forgotten when removed from the Manager")
}

func TestAPIWriterWritesStaticPodsToTheirMirrorPods(t *testing.T) {
	static := apiPod("static-uid", "etcd-node1")
	static.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	var mirror *v1.Pod
	e := newSyncEnv(t, podstatus.APIWriterConfig{MirrorPodFor: func(p *v1.Pod) (*v1.Pod, bool) {
		if p.Annotations["kubernetes.io/config.source"] != "file" {
			return nil, false
		}
		return mirror, true
	}}, apiPod("api-uid", "web"))
	e.statuses.SetPodStatus(static, statusOf(true))
	e.statuses.SetPodStatus(apiPod("api-uid", "web"), statusOf(true))
	assert.Equal(t, []string{"patch ns/web"}, e.sync(), "no mirror pod yet: the static pod waits")

	mirror = apiPod("mirror-1", "etcd-node1")
	e.api.put(mirror)
	assert.Equal(t, []string{"patch ns/etcd-node1"}, e.sync(), "the mirror pod appeared")
	assert.Contains(t, e.api.patches[1], `"uid":"mirror-1"`)

	mirror = apiPod("mirror-2", "etcd-node1") // recreated
	e.api.put(mirror)
	assert.Equal(t, []string{"patch ns/etcd-node1"}, e.sync(), "written again to the new mirror pod")
	assert.Equal(t, v1.ConditionTrue, readyOf(e.api.get("ns", "etcd-node1").Status))
}

func TestAPIWriterRun(t *testing.T) {
	pod := apiPod("u1", "web")
	e := newSyncEnv(t, podstatus.APIWriterConfig{SyncPeriod: 10 * time.Second}, pod)
	type batch struct {
		tried int
		retry time.Duration
	}
	batches := make(chan batch, 10)
	podstatus.AfterBatch(e.writer, func(tried int, retry time.Time) {
		b := batch{tried: tried}
		if !retry.IsZero() {
			b.retry = retry.Sub(e.clock.Now())
		}
		batches <- b
	})
	next := func() batch {
		t.Helper()
		select {
		case b := <-batches:
			return b
		case <-time.After(10 * time.Second):
			t.Fatal("no batch within 10s")
			return batch{}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.writer.Run(ctx) }()
	assert.Equal(t, batch{}, next(), "a first batch at once")
	assert.Error(t, e.writer.Run(ctx), "one Run at a time")

	e.api.failNextCalls(1)
	e.statuses.SetPodStatus(pod, statusOf(true))
	assert.Equal(t, batch{tried: 1, retry: time.Second}, next(), "woken by the change; failed")
	e.clock.Step(time.Second)
	assert.Equal(t, batch{tried: 1}, next(), "retried after the back-off")
	assert.Equal(t, []string{"patch ns/web", "get ns/web", "patch ns/web"}, e.api.takeCalls())

	e.api.put(apiPod("u1", "web")) // someone wiped the status; the source's copy does not show it yet
	e.clock.Step(9 * time.Second)
	assert.Equal(t, batch{}, next(), "every SyncPeriod")
	assert.Empty(t, e.api.takeCalls(), "no GET per pod to look for drift")

	e.statuses.ReplacePod(e.api.get("ns", "web")) // the watch delivers it
	e.clock.Step(10 * time.Second)
	assert.Equal(t, batch{tried: 1}, next(), "the next SyncPeriod repairs it")
	assert.Equal(t, []string{"patch ns/web"}, e.api.takeCalls())
	assert.Equal(t, v1.ConditionTrue, readyOf(e.api.get("ns", "web").Status))

	cancel()
	require.NoError(t, <-done)
}

func TestNewAPIWriterNamesBadFields(t *testing.T) {
	m := podstatus.NewManager(nil)
	for _, tc := range []struct {
		cfg  podstatus.APIWriterConfig
		want string
	}{
		{podstatus.APIWriterConfig{Statuses: m}, "APIWriterConfig.API is required"},
		{podstatus.APIWriterConfig{API: newFakeAPI()}, "APIWriterConfig.Statuses is required"},
		{podstatus.APIWriterConfig{API: newFakeAPI(), Statuses: m, SyncPeriod: -time.Second}, "APIWriterConfig.SyncPeriod: invalid value -1s"},
		{podstatus.APIWriterConfig{API: newFakeAPI(), Statuses: m, Writers: -1}, "APIWriterConfig.Writers: invalid value -1: must not be negative"},
		{podstatus.APIWriterConfig{API: newFakeAPI(), Statuses: m, BackOff: time.Minute, MaxBackOff: time.Second},
			"APIWriterConfig.MaxBackOff: invalid value 1s: must not be less than BackOff (1m0s)"},
	} {
		_, err := podstatus.NewAPIWriter(tc.cfg)
		assert.ErrorContains(t, err, tc.want)
	}
}

// gatedAPI holds each patch until released, counting those in flight.
type gatedAPI struct {
	*fakeAPI
	release       chan struct{}
	inFlight, max atomic.Int32
}

func (g *gatedAPI) PatchPodStatus(ctx context.Context, ns, name string, uid types.UID, patch []byte) (*v1.Pod, error) {
	n := g.inFlight.Add(1)
	for m := g.max.Load(); n > m && !g.max.CompareAndSwap(m, n); m = g.max.Load() {
	}
	<-g.release
	g.inFlight.Add(-1)
	return g.fakeAPI.PatchPodStatus(ctx, ns, name, uid, patch)
}

func TestAPIWriterWritesPodsInParallel(t *testing.T) {
	for _, writers := range []int{1, 3} {
		t.Run(fmt.Sprintf("writers=%d", writers), func(t *testing.T) {
			var pods []*v1.Pod
			for i := range 8 {
				pods = append(pods, apiPod(fmt.Sprint("u", i), fmt.Sprint("p", i)))
			}
			api := &gatedAPI{fakeAPI: newFakeAPI(pods...), release: make(chan struct{})}
			statuses := podstatus.NewManager(clocktesting.NewFakeClock(t0))
			w, err := podstatus.NewAPIWriter(podstatus.APIWriterConfig{API: api, Statuses: statuses, Writers: writers})
			require.NoError(t, err)
			for _, p := range pods {
				statuses.SetPodStatus(p, statusOf(true))
			}
			done := make(chan int)
			go func() { done <- w.Sync(context.Background()) }()
			poll.Eventually(t, func() bool { return api.inFlight.Load() == int32(writers) }, 10*time.Second, time.Millisecond,
				"%d writes in flight", writers)
			close(api.release)
			assert.Equal(t, 8, <-done)
			assert.Equal(t, int32(writers), api.max.Load(), "never more than Writers at once")
			for _, p := range pods {
				assert.Equal(t, v1.ConditionTrue, readyOf(api.get("ns", p.Name).Status), p.Name)
			}
		})
	}
}

// A write waiting its turn in a batch takes the newest status: the one
// published meanwhile is written instead of the one the batch began with,
// and not again later.
func TestAPIWriterWritesTheNewestStatusOfItsBatch(t *testing.T) {
	a, b := apiPod("ua", "a"), apiPod("ub", "b")
	api := &gatedAPI{fakeAPI: newFakeAPI(a, b), release: make(chan struct{})}
	statuses := podstatus.NewManager(clocktesting.NewFakeClock(t0))
	w, err := podstatus.NewAPIWriter(podstatus.APIWriterConfig{API: api, Statuses: statuses, Writers: 1})
	require.NoError(t, err)
	for _, p := range []*v1.Pod{a, b} {
		statuses.SetPodStatus(p, statusOf(false))
	}
	done := make(chan int)
	go func() { done <- w.Sync(context.Background()) }()
	poll.Eventually(t, func() bool { return api.inFlight.Load() == 1 }, 10*time.Second, time.Millisecond, "the first write in flight")
	for _, p := range []*v1.Pod{a, b} {
		statuses.SetPodStatus(p, statusOf(true))
	}
	close(api.release)
	require.Equal(t, 2, <-done)
	var ready, stale []string
	for _, p := range []*v1.Pod{a, b} {
		if readyOf(api.get("ns", p.Name).Status) == v1.ConditionTrue {
			ready = append(ready, p.Name)
		} else {
			stale = append(stale, "patch ns/"+p.Name)
		}
	}
	assert.Len(t, ready, 1, "the pod written second got the status published while the first was written")
	assert.Len(t, api.takeCalls(), 2)
	require.Equal(t, 1, w.Sync(context.Background()), "then only the first pod's newer status is due")
	assert.Equal(t, stale, api.takeCalls())
}

// heldAPI holds the patches of the pods in hold until their channel is
// closed; the others go through.
type heldAPI struct {
	*fakeAPI
	hold    map[string]chan struct{} // by pod name
	holding chan string              // a held patch arrived
}

func (h *heldAPI) PatchPodStatus(ctx context.Context, ns, name string, uid types.UID, patch []byte) (*v1.Pod, error) {
	if c, ok := h.hold[name]; ok {
		h.holding <- name
		<-c
	}
	return h.fakeAPI.PatchPodStatus(ctx, ns, name, uid, patch)
}

// runWriter runs w until the test ends.
func runWriter(t *testing.T, w *podstatus.APIWriter) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
}

// Run does not wait for a slow write before writing what was published
// meanwhile (the kubelet's batches, and Sync's, do).
func TestAPIWriterRunWritesPastASlowWrite(t *testing.T) {
	a, b := apiPod("ua", "a"), apiPod("ub", "b")
	release := make(chan struct{})
	api := &heldAPI{fakeAPI: newFakeAPI(a, b), hold: map[string]chan struct{}{"a": release}, holding: make(chan string, 1)}
	statuses := podstatus.NewManager(clocktesting.NewFakeClock(t0))
	w, err := podstatus.NewAPIWriter(podstatus.APIWriterConfig{API: api, Statuses: statuses, Clock: clocktesting.NewFakeClock(t0)})
	require.NoError(t, err)
	runWriter(t, w)
	defer close(release)

	statuses.SetPodStatus(a, statusOf(true))
	require.Equal(t, "a", <-api.holding)
	statuses.SetPodStatus(b, statusOf(true))
	poll.Eventually(t, func() bool { return readyOf(api.get("ns", "b").Status) == v1.ConditionTrue }, 5*time.Second, time.Millisecond,
		"b written while a's write is held")
	assert.Empty(t, readyOf(api.get("ns", "a").Status), "a's write still held")
}

// Under a backlog, a status that tells of a started container goes before
// other changes planned earlier.
func TestAPIWriterRunWritesStartsFirst(t *testing.T) {
	x, p, q := apiPod("ux", "x"), apiPod("up", "p"), apiPod("uq", "q")
	release := make(chan struct{})
	api := &heldAPI{fakeAPI: newFakeAPI(x, p, q), hold: map[string]chan struct{}{"x": release}, holding: make(chan string, 1)}
	statuses := podstatus.NewManager(clocktesting.NewFakeClock(t0))
	w, err := podstatus.NewAPIWriter(podstatus.APIWriterConfig{API: api, Statuses: statuses, Clock: clocktesting.NewFakeClock(t0), Writers: 1})
	require.NoError(t, err)
	queued := make(chan int, 100)
	podstatus.AfterPlan(w, func(n int) { queued <- n })
	runWriter(t, w)

	statuses.SetPodStatus(x, statusOf(true))
	require.Equal(t, "x", <-api.holding) // the only writer is busy
	statuses.SetPodStatus(p, v1.PodStatus{Phase: v1.PodPending, ContainerStatuses: []v1.ContainerStatus{waiting("web", "ContainerCreating")}})
	statuses.SetPodStatus(q, statusOf(false))
	for n := 0; n < 2; {
		select {
		case n = <-queued:
		case <-time.After(5 * time.Second):
			t.Fatal("p and q not both queued")
		}
	}
	close(release)
	poll.Eventually(t, func() bool { return len(api.fakeAPI.callsSoFar()) == 3 }, 5*time.Second, time.Millisecond, "three patches")
	assert.Equal(t, []string{"patch ns/x", "patch ns/q", "patch ns/p"}, api.takeCalls(), "q's start before p's earlier change")
}

// StatusWritten gets the API server's answer to each write (the kubelet's
// status manager tells its pod startup latency tracker), and nothing when
// nothing is written.
func TestAPIWriterTellsOfEachStatusWritten(t *testing.T) {
	var written []string
	p := apiPod("u1", "web")
	e := newSyncEnv(t, podstatus.APIWriterConfig{StatusWritten: func(pod *v1.Pod) {
		written = append(written, fmt.Sprintf("%s ready=%v rv=%s", pod.Name, readyOf(pod.Status), pod.ResourceVersion))
	}}, p)
	e.statuses.SetPodStatus(p, statusOf(false))
	assert.Equal(t, []string{"patch ns/web"}, e.sync())
	e.statuses.SetPodStatus(p, statusOf(true))
	assert.Equal(t, []string{"patch ns/web"}, e.sync())
	assert.Empty(t, e.sync())
	require.Len(t, written, 2)
	assert.Regexp(t, `^web ready=False rv=\d+$`, written[0])
	assert.Regexp(t, `^web ready=True rv=\d+$`, written[1])
}

// changingAPI runs once, if set, at the start of the next patch: a status
// published while a write is under way.
type changingAPI struct {
	*fakeAPI
	once func()
}

func (c *changingAPI) PatchPodStatus(ctx context.Context, ns, name string, uid types.UID, patch []byte) (*v1.Pod, error) {
	if c.once != nil {
		c.once()
		c.once = nil
	}
	return c.fakeAPI.PatchPodStatus(ctx, ns, name, uid, patch)
}

// StatusSynced gets, for each status brought up to date in the API, the
// time since the first change not yet written was published (the
// kubelet's kubelet_pod_status_sync_duration_seconds), changes in between
// included; a change published during a write is timed from its own
// publication; nothing is observed when nothing was pending.
func TestAPIWriterTimesEachStatusSync(t *testing.T) {
	var took []time.Duration
	p := apiPod("u1", "web")
	e := newSyncEnv(t, podstatus.APIWriterConfig{}, p)
	changing := &changingAPI{fakeAPI: e.api}
	w, err := podstatus.NewAPIWriter(podstatus.APIWriterConfig{API: changing, Statuses: e.statuses, Clock: e.clock,
		Jitter: func(d time.Duration) time.Duration { return d }, StatusSynced: func(d time.Duration) { took = append(took, d) }})
	require.NoError(t, err)
	e.writer = w

	e.statuses.SetPodStatus(p, withPhase(statusOf(false), v1.PodPending))
	e.clock.Step(2 * time.Second)
	e.statuses.SetPodStatus(p, statusOf(false))
	e.clock.Step(time.Second)
	assert.Equal(t, []string{"patch ns/web"}, e.sync())
	assert.Equal(t, []time.Duration{3 * time.Second}, took, "from the first change not written")

	took = nil
	assert.Empty(t, e.sync())
	assert.Empty(t, took, "nothing pending")

	e.statuses.SetPodStatus(p, statusOf(true))
	e.clock.Step(500 * time.Millisecond)
	changing.once = func() {
		e.clock.Step(100 * time.Millisecond)
		e.statuses.SetPodStatus(p, statusOf(false))
		e.clock.Step(250 * time.Millisecond)
	}
	assert.Equal(t, []string{"patch ns/web"}, e.sync())
	assert.Equal(t, []time.Duration{850 * time.Millisecond}, took)
	e.clock.Step(time.Second)
	assert.Equal(t, []string{"patch ns/web"}, e.sync())
	assert.Equal(t, []time.Duration{850 * time.Millisecond, 1250 * time.Millisecond}, took,
		"the change made during the write: from its own time")
}

// Run keeps a writer in four for urgent writes: with every other writer
// held by slow routine writes (under the client's rate limit, each waits
// its turn), a started container's status is written at once, and the
// next routine write waits for a routine writer.
func TestAPIWriterRunKeepsAWriterForStarts(t *testing.T) {
	pods := map[string]*v1.Pod{}
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		pods[name] = apiPod("u"+name, name)
	}
	release := make(chan struct{})
	api := &heldAPI{fakeAPI: newFakeAPI(pods["a"], pods["b"], pods["c"], pods["d"], pods["e"]), holding: make(chan string, 10),
		hold: map[string]chan struct{}{"a": release, "b": release, "c": release, "d": release}}
	statuses := podstatus.NewManager(clocktesting.NewFakeClock(t0))
	w, err := podstatus.NewAPIWriter(podstatus.APIWriterConfig{API: api, Statuses: statuses, Clock: clocktesting.NewFakeClock(t0), Writers: 4})
	require.NoError(t, err)
	planned := make(chan int, 100)
	podstatus.AfterPlan(w, func(queued int) { planned <- queued })
	runWriter(t, w)
	defer close(release)

	creating := v1.PodStatus{Phase: v1.PodPending, ContainerStatuses: []v1.ContainerStatus{waiting("web", "ContainerCreating")}}
	var held []string
	for _, name := range []string{"a", "b", "c"} {
		statuses.SetPodStatus(pods[name], creating)
		held = append(held, <-api.holding)
	}
	assert.ElementsMatch(t, []string{"a", "b", "c"}, held)
	for len(planned) > 0 {
		<-planned // the rounds that planned a, b and c
	}
	statuses.SetPodStatus(pods["d"], creating)
	require.Equal(t, 1, <-planned, "d planned alone")
	// The next round is planned once d's was dispatched.
	statuses.SetPodStatus(pods["e"], statusOf(false))
	poll.Eventually(t, func() bool { return len(api.get("ns", "e").Status.ContainerStatuses) == 1 }, 5*time.Second, time.Millisecond,
		"e's started container written while three routine writes are held")
	select {
	case name := <-api.holding:
		t.Fatalf("%s's routine write took the writer kept for starts", name)
	default:
	}
}
