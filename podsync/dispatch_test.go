package podsync_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodekit-dev/nodekit/admission"
	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/kubeapi/clientgo"
	"github.com/nodekit-dev/nodekit/mirrorpod"
	"github.com/nodekit-dev/nodekit/podsource"
	"github.com/nodekit-dev/nodekit/podstatus"
	"github.com/nodekit-dev/nodekit/podsync"
	"github.com/nodekit-dev/nodekit/podworkers"
)

// dispatchWorkers records updates and answers State from states.
type dispatchWorkers struct {
	states  map[types.UID]podworkers.State
	updates []string
}

func (w *dispatchWorkers) State(uid types.UID) (podworkers.State, bool) {
	s, ok := w.states[uid]
	return s, ok
}

func (w *dispatchWorkers) UpdatePod(u podworkers.Update) {
	names := map[podworkers.UpdateType]string{podworkers.SyncPodCreate: "SyncPodCreate", podworkers.SyncPodUpdate: "SyncPodUpdate",
		podworkers.SyncPodKill: "SyncPodKill", podworkers.SyncPodSync: "SyncPodSync"}
	update := fmt.Sprintf("%s %s", names[u.Type], u.Pod.Name)
	if u.Pod.Status.Phase != "" {
		update += " " + string(u.Pod.Status.Phase)
	}
	if u.Refused {
		update += " (refused)"
	}
	w.updates = append(w.updates, update)
	if u.Type == podworkers.SyncPodCreate {
		w.states[u.Pod.UID] = podworkers.Syncing
	}
}

func (w *dispatchWorkers) ReplacePod(p *v1.Pod) { w.updates = append(w.updates, "ReplacePod "+p.Name) }

type recorded struct {
	probed, removed, statuses, events, replaced []string
}

func (r *recorded) ReplacePod(p *v1.Pod) { r.replaced = append(r.replaced, p.Name) }

func (r *recorded) SetPodStatus(p *v1.Pod, s v1.PodStatus) bool {
	r.statuses = append(r.statuses, fmt.Sprintf("%s %s %s %s %q", p.Name, s.QOSClass, s.Phase, s.Reason, s.Message))
	return true
}

func (r *recorded) Eventf(_ apiruntime.Object, typ, reason, format string, args ...any) {
	r.events = append(r.events, fmt.Sprintf("%s %s %s", typ, reason, fmt.Sprintf(format, args...)))
}

func (r *recorded) AddPod(p *v1.Pod)        { r.probed = append(r.probed, p.Name) }
func (r *recorded) RemovePod(uid types.UID) { r.removed = append(r.removed, string(uid)) }
func (r *recorded) Split(pods []*v1.Pod, _ bool) []*v1.Pod {
	var rest []*v1.Pod
	for _, p := range pods {
		if p.Annotations["kubernetes.io/config.mirror"] == "" {
			rest = append(rest, p)
		}
	}
	return rest
}

func TestDispatch(t *testing.T) {
	pod := func(name string, mirror bool) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name)}}
		if mirror {
			p.Annotations = map[string]string{"kubernetes.io/config.mirror": "x"}
		}
		return p
	}
	for _, tc := range []struct {
		name          string
		states        map[types.UID]podworkers.State
		update        podsource.PodUpdate
		updates       []string
		probed        []string
		statusRemoved []string
		statuses      []string // set for refused pods
		events        []string
		replaced      []string // in the status manager
	}{
		{name: "new pods are admitted and probed", update: podsource.PodUpdate{Op: podsource.ADD, Pods: []*v1.Pod{pod("a", false), pod("b", false)}},
			updates: []string{"SyncPodCreate a", "SyncPodCreate b"}, probed: []string{"a", "b"}},
		// The kubelet's pod manager keeps a rejected pod; here the workers
		// keep it Terminated, never started.
		{name: "an admission handler refuses a pod, the next is asked no more; the workers keep it as finished", update: podsource.PodUpdate{Op: podsource.ADD,
			Pods: []*v1.Pod{pod("a", false), pod("refused", false)}}, updates: []string{"SyncPodCreate a", "SyncPodCreate refused Failed (refused)"}, probed: []string{"a"},
			statuses: []string{`refused BestEffort Failed Evicted "Pod was rejected: The node had condition: [DiskPressure]. "`},
			events:   []string{"Warning Evicted The node had condition: [DiskPressure]. "}},
		{name: "a pod already finished is handed over, not probed", update: podsource.PodUpdate{Op: podsource.ADD,
			Pods: []*v1.Pod{func() *v1.Pod { p := pod("done", false); p.Status.Phase = v1.PodSucceeded; return p }()}},
			updates: []string{"SyncPodCreate done Succeeded"}, statuses: []string{`done  Succeeded  ""`}},
		{name: "mirror pods are not run", update: podsource.PodUpdate{Op: podsource.ADD, Pods: []*v1.Pod{pod("m", true)}}},
		{name: "a known pod is updated", states: map[types.UID]podworkers.State{"a": podworkers.Syncing},
			update: podsource.PodUpdate{Op: podsource.UPDATE, Pods: []*v1.Pod{pod("a", false)}}, updates: []string{"SyncPodUpdate a"}},
		{name: "kubelet HandlePodReconcile: a known pod's newer status is held in place of the old object, without work",
			states: map[types.UID]podworkers.State{"a": podworkers.Syncing},
			update: podsource.PodUpdate{Op: podsource.RECONCILE, Pods: []*v1.Pod{pod("a", false)}}, updates: []string{"ReplacePod a"},
			replaced: []string{"a"}},
		{name: "an unknown pod's status change is dropped", update: podsource.PodUpdate{Op: podsource.RECONCILE, Pods: []*v1.Pod{pod("a", false)}}},
		{name: "an unknown pod's update is dropped", update: podsource.PodUpdate{Op: podsource.UPDATE, Pods: []*v1.Pod{pod("a", false)}}},
		{name: "a deleted pod is killed", states: map[types.UID]podworkers.State{"a": podworkers.Syncing},
			update: podsource.PodUpdate{Op: podsource.DELETE, Pods: []*v1.Pod{pod("a", false)}}, updates: []string{"SyncPodKill a"}},
		{name: "a pod its source removes while it terminates (finished, evicted, deleted) is told: the workers forget it once terminated",
			states: map[types.UID]podworkers.State{"a": podworkers.Terminating},
			update: podsource.PodUpdate{Op: podsource.REMOVE, Pods: []*v1.Pod{pod("a", false)}}, updates: []string{"SyncPodKill a"}},
		{name: "a deletion while it terminates is told: a shorter grace period cuts the termination short",
			states: map[types.UID]podworkers.State{"a": podworkers.Terminating},
			update: podsource.PodUpdate{Op: podsource.DELETE, Pods: []*v1.Pod{pod("a", false)}}, updates: []string{"SyncPodKill a"}},
		{name: "kubelet HandlePodAdditions: a pod already Failed (seen again after a restart) is not admitted: its final status stays",
			update: podsource.PodUpdate{Op: podsource.ADD,
				Pods: []*v1.Pod{func() *v1.Pod { p := pod("refused-if-asked", false); p.Status.Phase = v1.PodFailed; return p }()}},
			updates: []string{"SyncPodCreate refused-if-asked Failed"}, statuses: []string{`refused-if-asked  Failed  ""`}},
		{name: "a removed pod the workers forgot loses its status", update: podsource.PodUpdate{Op: podsource.REMOVE, Pods: []*v1.Pod{pod("a", false)}},
			statusRemoved: []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &dispatchWorkers{states: map[types.UID]podworkers.State{}}
			for k, v := range tc.states {
				w.states[k] = v
			}
			r := &recorded{}
			asked := 0
			admit := []admission.PodAdmitHandler{
				admission.PodAdmitHandlerFunc(func(p *v1.Pod) admission.PodAdmitResult {
					return admission.PodAdmitResult{Admit: !strings.HasPrefix(p.Name, "refused"), Reason: "Evicted",
						Message: "The node had condition: [DiskPressure]. "}
				}),
				admission.PodAdmitHandlerFunc(func(*v1.Pod) admission.PodAdmitResult { asked++; return admission.PodAdmitResult{Admit: true} }),
			}
			d, err := podsync.NewDispatcher(podsync.DispatchConfig{Workers: w, Prober: r, Statuses: r, Mirrors: r,
				Admit: admit, Recorder: r})
			require.NoError(t, err)
			d.Dispatch(tc.update)
			for _, p := range tc.update.Pods {
				if p.Name == "refused" {
					assert.Empty(t, p.Status.Phase, "the source's pod is not modified")
				}
			}
			assert.Equal(t, tc.updates, w.updates)
			assert.Equal(t, tc.probed, r.probed)
			assert.Equal(t, tc.statusRemoved, r.removed)
			assert.Equal(t, tc.statuses, r.statuses)
			assert.Equal(t, tc.events, r.events)
			assert.Equal(t, tc.replaced, r.replaced)
			admitted := 0
			for _, u := range w.updates {
				if strings.HasPrefix(u, "SyncPodCreate") && !strings.Contains(u, " Failed") && !strings.HasSuffix(u, " Succeeded") {
					admitted++
				}
			}
			assert.Equal(t, admitted, asked, "every handler is asked about an admitted pod, none after a refusal")
		})
	}
	_, err := podsync.NewDispatcher(podsync.DispatchConfig{})
	assert.EqualError(t, err, "podsync: DispatchConfig: Workers, Prober and Statuses are required")
}

// The kubelet treats a DELETE as an update: its pod manager keeps a mirror
// pod that got a deletion timestamp (someone deleted it gracefully; it is
// still in the API), and HandlePodCleanups deletes it once its static pod
// is gone. Only a REMOVE (gone from the API) forgets it. Forgotten at the
// DELETE, a mirror pod whose static pod was removed before its next sync
// stayed in the API for good.
func TestDispatchKeepsAMirrorPodBeingDeleted(t *testing.T) {
	ctx := context.Background()
	mirror := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "static-node-1", Namespace: "default", UID: "mirror-1",
		Annotations: map[string]string{mirrorpod.ConfigMirrorAnnotation: "hash", mirrorpod.ConfigSourceAnnotation: "api"}},
		Spec: v1.PodSpec{NodeName: "node-1"}}
	deleting := mirror.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Unix(1000, 0)}
	grace := int64(30)
	deleting.DeletionGracePeriodSeconds = &grace
	client := fake.NewClientset(deleting)
	m, err := mirrorpod.New(mirrorpod.Config{Client: clientgo.Adapt(client), NodeName: "node-1"})
	require.NoError(t, err)
	w := &dispatchWorkers{states: map[types.UID]podworkers.State{}}
	r := &recorded{}
	d, err := podsync.NewDispatcher(podsync.DispatchConfig{Workers: w, Prober: r, Statuses: r, Mirrors: m})
	require.NoError(t, err)
	static := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "static-node-1", Namespace: "default", UID: "static-uid"}}

	d.Dispatch(podsource.PodUpdate{Op: podsource.ADD, Pods: []*v1.Pod{mirror}, Source: podsource.SourceAPI})
	d.Dispatch(podsource.PodUpdate{Op: podsource.DELETE, Pods: []*v1.Pod{deleting}, Source: podsource.SourceAPI})
	assert.Empty(t, w.updates, "a mirror pod is never run")
	if got := m.Mirror(static); assert.NotNil(t, got, "a mirror pod being deleted is still in the API: known") {
		assert.NotNil(t, got.DeletionTimestamp, "in its latest version")
	}

	// Its static pod is gone: housekeeping deletes it.
	require.NoError(t, m.DeleteOrphans(ctx, func(string, string) bool { return false }))
	_, err = client.CoreV1().Pods("default").Get(ctx, "static-node-1", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the orphaned mirror pod is deleted, got %v", err)

	// A REMOVE (gone from the API) forgets it.
	d.Dispatch(podsource.PodUpdate{Op: podsource.ADD, Pods: []*v1.Pod{mirror}, Source: podsource.SourceAPI})
	require.NotNil(t, m.Mirror(static))
	d.Dispatch(podsource.PodUpdate{Op: podsource.REMOVE, Pods: []*v1.Pod{mirror}, Source: podsource.SourceAPI})
	assert.Nil(t, m.Mirror(static), "a removed mirror pod is forgotten")
	assert.Empty(t, w.updates)
}

// The kubelet's HandlePodReconcile: a status-only change (RECONCILE) is
// held without work, unless the pod has readiness gates and its Ready
// condition, as written, is not what its status now makes it (status
// NeedToReconcilePodReadiness: Status or Message differ): then the pod is
// synced at once (UpdatePod with SyncPodSync), so that a controller's gate
// condition reaches Ready without waiting for the resync.
func TestDispatchReconcileReadinessGates(t *testing.T) {
	const gate1, gate2 = "example.com/gate1", "example.com/gate2"
	missing := func(g string) string {
		return fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", g)
	}
	cond := func(typ, status, message string) v1.PodCondition {
		return v1.PodCondition{Type: v1.PodConditionType(typ), Status: v1.ConditionStatus(status), Message: message}
	}
	ready := func(status, message string) v1.PodCondition { return cond(string(v1.PodReady), status, message) }
	pod := func(gates []string, containerReady bool, conditions ...v1.PodCondition) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "a"}}
		p.Spec.Containers = []v1.Container{{Name: "c"}}
		for _, g := range gates {
			p.Spec.ReadinessGates = append(p.Spec.ReadinessGates, v1.PodReadinessGate{ConditionType: v1.PodConditionType(g)})
		}
		p.Status = v1.PodStatus{Phase: v1.PodRunning, Conditions: conditions,
			ContainerStatuses: []v1.ContainerStatus{{Name: "c", Ready: containerReady}}}
		return p
	}
	held := []string{"ReplacePod a"}
	synced := []string{"ReplacePod a", "SyncPodSync a Running"}
	for _, tc := range []struct {
		name    string
		pod     *v1.Pod
		updates []string
	}{
		{"kubelet HandlePodReconcile: the last gate's condition set True while Ready says it does not exist: synced at once",
			pod([]string{gate1}, true, ready("False", missing(gate1)), cond(gate1, "True", "")), synced},
		{"kubelet NeedToReconcilePodReadiness: one of two gates set, Ready stays False with another message: synced",
			pod([]string{gate1, gate2}, true, ready("False", missing(gate1)+", "+missing(gate2)), cond(gate1, "True", "")), synced},
		{"kubelet NeedToReconcilePodReadiness: a gate turned False while Ready is True: synced",
			pod([]string{gate1}, true, ready("True", ""), cond(gate1, "False", "")), synced},
		{"kubelet NeedToReconcilePodReadiness: Ready already what the gates make it: held without work",
			pod([]string{gate1}, true, ready("True", ""), cond(gate1, "True", "")), held},
		{"kubelet NeedToReconcilePodReadiness: gates set but the containers unready, Ready says so already: held",
			pod([]string{gate1}, false, ready("False", "containers with unready status: [c]"), cond(gate1, "True", "")), held},
		{"kubelet NeedToReconcilePodReadiness: no readiness gates: held, whatever Ready says",
			pod(nil, true, ready("False", "containers with unready status: [c]")), held},
		{"kubelet NeedToReconcilePodReadiness: no Ready condition written yet: held",
			pod([]string{gate1}, true, cond(gate1, "True", "")), held},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &dispatchWorkers{states: map[types.UID]podworkers.State{"a": podworkers.Syncing}}
			r := &recorded{}
			d, err := podsync.NewDispatcher(podsync.DispatchConfig{Workers: w, Prober: r, Statuses: r})
			require.NoError(t, err)
			d.Dispatch(podsource.PodUpdate{Op: podsource.RECONCILE, Pods: []*v1.Pod{tc.pod}})
			assert.Equal(t, tc.updates, w.updates)
			assert.Equal(t, []string{"a"}, r.replaced, "the status manager holds the newer object")
		})
	}
}

// readyProbes is a prober without probes that says what the kubelet's
// does of such containers: running ones are started and ready.
type readyProbes struct{ noProbes }

func (*readyProbes) UpdatePodStatus(_ *v1.Pod, s *v1.PodStatus) {
	for i := range s.ContainerStatuses {
		c := &s.ContainerStatuses[i]
		running := c.State.Running != nil
		c.Started, c.Ready = &running, running
	}
}

// The readiness gates spec ("Pods should support pod readiness gates",
// [NodeConformance]) on the fake runtime: the pod runs, unready for want
// of its gate's condition; a controller sets it in the API, which the
// source delivers as a RECONCILE; Ready turns True without the resync
// (an hour here), as with the kubelet's HandlePodReconcile.
func TestDispatchReconcileReadinessGateReachesReady(t *testing.T) {
	e := newEnv(t)
	syncer, err := podsync.New(podsync.Config{Runtime: e.mgr, Prober: &readyProbes{}, Cache: e.cache, Statuses: e.statuses,
		Reasons: podstatus.NewReasonCache(), RuntimeName: "nodekit-fake", HostIPs: []string{"127.0.0.1"}})
	require.NoError(t, err)
	workers, err := podworkers.New(podworkers.Config{PodSyncer: syncer, Cache: e.cache, ResyncInterval: time.Hour,
		Jitter: func(d time.Duration) time.Duration { return d }, TickPeriod: 10 * time.Millisecond})
	require.NoError(t, err)
	d, err := podsync.NewDispatcher(podsync.DispatchConfig{Workers: workers, Prober: &recorded{}, Statuses: e.statuses})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = workers.Run(ctx) }()
	go func() { // the PLEG's relist: every pod's cached status is current
		for ctx.Err() == nil {
			e.cache.UpdateTime(time.Now())
			time.Sleep(10 * time.Millisecond)
		}
	}()
	defer func() { cancel(); <-done }()

	const gate = "example.com/lb"
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-ready", Namespace: "default", UID: "g1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: testImage, Args: []string{"serve"}}},
			ReadinessGates: []v1.PodReadinessGate{{ConditionType: gate}}}}
	readyCondition := func() string {
		s, _ := e.statuses.PodStatus(pod.UID)
		for _, c := range s.Conditions {
			if c.Type == v1.PodReady {
				return string(c.Status) + " " + c.Message
			}
		}
		return ""
	}
	d.Dispatch(podsource.PodUpdate{Op: podsource.ADD, Pods: []*v1.Pod{pod}})
	unready := `False corresponding condition of pod readiness gate "example.com/lb" does not exist.`
	poll.Eventually(t, func() bool { return readyCondition() == unready }, 10*time.Second, 10*time.Millisecond, readyCondition())

	// The API pod now: the status written, and the controller's condition.
	reconciled := pod.DeepCopy()
	reconciled.Status, _ = e.statuses.PodStatus(pod.UID)
	reconciled.Status.Conditions = append(reconciled.Status.Conditions, v1.PodCondition{Type: gate, Status: v1.ConditionTrue})
	d.Dispatch(podsource.PodUpdate{Op: podsource.RECONCILE, Pods: []*v1.Pod{reconciled}})
	poll.Eventually(t, func() bool { return readyCondition() == "True " }, 10*time.Second, 10*time.Millisecond,
		"Ready follows the gate's condition at once")
}
