package podsync_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit-dev/nodekit/podsource"
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
		podworkers.SyncPodKill: "SyncPodKill"}
	update := fmt.Sprintf("%s %s", names[u.Type], u.Pod.Name)
	if u.Pod.Status.Phase != "" {
		update += " " + string(u.Pod.Status.Phase)
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
			Pods: []*v1.Pod{pod("a", false), pod("refused", false)}}, updates: []string{"SyncPodCreate a", "SyncPodCreate refused Failed"}, probed: []string{"a"},
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
			admit := []podsync.PodAdmitFunc{
				func(p *v1.Pod) (bool, string, string) {
					return !strings.HasPrefix(p.Name, "refused"), "Evicted", "The node had condition: [DiskPressure]. "
				},
				func(*v1.Pod) (bool, string, string) { asked++; return true, "", "" },
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
				if strings.HasPrefix(u, "SyncPodCreate") && !strings.HasSuffix(u, " Failed") && !strings.HasSuffix(u, " Succeeded") {
					admitted++
				}
			}
			assert.Equal(t, admitted, asked, "every handler is asked about an admitted pod, none after a refusal")
		})
	}
	_, err := podsync.NewDispatcher(podsync.DispatchConfig{})
	assert.EqualError(t, err, "podsync: DispatchConfig: Workers, Prober and Statuses are required")
}
