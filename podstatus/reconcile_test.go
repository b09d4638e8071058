package podstatus_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit-dev/nodekit/podstatus"
)

// driftEnv is a syncEnv whose pod web is an API pod, or a static pod
// written to its mirror pod web; deliver hands the APIWriter the API pod as
// the API source's watch would: to the Manager (ReplacePod) or as the
// mirror pod.
type driftEnv struct {
	*syncEnv
	pod    *v1.Pod // published
	mirror *v1.Pod // static: the mirror pod known
}

func newDriftEnv(t *testing.T, static bool) *driftEnv {
	d := &driftEnv{pod: apiPod("u1", "web")}
	cfg := podstatus.APIWriterConfig{SyncPeriod: 10 * time.Second}
	inAPI := d.pod
	if static {
		d.pod = apiPod("static-uid", "web")
		inAPI = apiPod("mirror-uid", "web")
		d.mirror = inAPI
		cfg.MirrorPodFor = func(*v1.Pod) (*v1.Pod, bool) { return d.mirror, true }
	}
	d.syncEnv = newSyncEnv(t, cfg, inAPI)
	return d
}

func (d *driftEnv) deliver() {
	inAPI := d.api.get("ns", "web")
	if d.mirror != nil {
		d.mirror = inAPI
		return
	}
	d.statuses.ReplacePod(inAPI)
}

// overwrite has someone else write the API pod's status, and delivers it.
func (d *driftEnv) overwrite(edit func(*v1.PodStatus)) {
	p := d.api.get("ns", "web")
	edit(&p.Status)
	d.api.put(p)
	d.deliver()
}

// tick moves the clock on by a SyncPeriod and runs a batch.
func (d *driftEnv) tick() []string {
	d.clock.Step(10 * time.Second)
	return d.sync()
}

func TestAPIWriterRepairsStatusesOverwrittenInTheAPI(t *testing.T) {
	written := []string{"patch ns/web"}
	failed := withPhase(statusOf(false), v1.PodFailed)
	for _, tc := range []struct {
		name      string
		static    bool
		publish   v1.PodStatus
		overwrite func(*v1.PodStatus)
		want      []string // on the next periodic pass
		check     func(t *testing.T, got v1.PodStatus)
	}{
		{"made unready by another writer: patched back", false, statusOf(true),
			func(s *v1.PodStatus) { s.Conditions[0].Status = v1.ConditionFalse }, written,
			func(t *testing.T, got v1.PodStatus) { assert.Equal(t, v1.ConditionTrue, readyOf(got)) }},
		{"wiped, as by an etcd backup from before the pod ran: patched back", false, statusOf(true),
			func(s *v1.PodStatus) { *s = v1.PodStatus{Phase: v1.PodPending} }, written,
			func(t *testing.T, got v1.PodStatus) {
				assert.Equal(t, v1.PodRunning, got.Phase)
				assert.Equal(t, v1.ConditionTrue, readyOf(got))
				require.NotNil(t, got.StartTime)
				assert.True(t, got.StartTime.Time.Equal(t0), "the start time published")
			}},
		{"no drift, the watch's copy of our own write: no call", false, statusOf(true),
			func(*v1.PodStatus) {}, nil, nil},
		{"containers listed in another order: no call", false,
			v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{running("a", true), running("b", true)}},
			func(s *v1.PodStatus) {
				s.ContainerStatuses[0], s.ContainerStatuses[1] = s.ContainerStatuses[1], s.ContainerStatuses[0]
			}, nil, nil},
		{"a condition of another writer, kept by the merge: no call", false, statusOf(true),
			func(s *v1.PodStatus) {
				s.Conditions = append(s.Conditions, v1.PodCondition{Type: "example.com/gate", Status: v1.ConditionTrue})
			}, nil, nil},
		{"terminal, overwritten as running: Failed again", false, failed,
			func(s *v1.PodStatus) { *s = statusOf(true) }, written,
			func(t *testing.T, got v1.PodStatus) {
				assert.Equal(t, v1.PodFailed, got.Phase)
				assert.Equal(t, v1.ConditionFalse, readyOf(got))
			}},
		{"terminal, its containers wiped: restored", false, failed,
			func(s *v1.PodStatus) { s.ContainerStatuses = nil }, written,
			func(t *testing.T, got v1.PodStatus) { assert.Len(t, got.ContainerStatuses, 1) }},
		{"terminal, the API's other terminal phase: latched, no call", false, failed,
			func(s *v1.PodStatus) { s.Phase = v1.PodSucceeded }, nil,
			func(t *testing.T, got v1.PodStatus) { assert.Equal(t, v1.PodSucceeded, got.Phase) }},
		{"static pod, its mirror pod made unready: patched back", true, statusOf(true),
			func(s *v1.PodStatus) { s.Conditions[0].Status = v1.ConditionFalse }, written,
			func(t *testing.T, got v1.PodStatus) { assert.Equal(t, v1.ConditionTrue, readyOf(got)) }},
		{"static pod, no drift in its mirror pod: no call", true, statusOf(true), func(*v1.PodStatus) {}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDriftEnv(t, tc.static)
			d.statuses.SetPodStatus(d.pod, tc.publish)
			require.Equal(t, written, d.sync())
			d.deliver() // our write, seen by the watch
			assert.Empty(t, d.tick(), "in sync: no call on the periodic pass")

			d.overwrite(tc.overwrite)
			d.clock.Step(time.Second)
			assert.Empty(t, d.sync(), "not a periodic pass")
			assert.Equal(t, tc.want, d.tick(), "the periodic pass")
			assert.Len(t, d.api.patches, 1+len(tc.want))
			assert.Equal(t, uint64(len(tc.want)), podstatus.Reconciles(d.writer), "reconciles counted")
			if tc.check != nil {
				tc.check(t, d.api.get("ns", "web").Status)
			}

			d.deliver()
			assert.Empty(t, d.tick(), "repaired: nothing more")
		})
	}
}

func TestAPIWriterRepairsOnlyWhatItMayWrite(t *testing.T) {
	deleted := metav1.NewTime(t0)
	for _, tc := range []struct {
		name   string
		static bool
		setup  func(d *driftEnv) // after the first write, before the overwrite
		edit   func(*v1.PodStatus)
		want   []string
	}{
		{"deleted by the APIWriter: never written again", false,
			func(d *driftEnv) {
				p := d.api.get("ns", "web")
				p.DeletionTimestamp = &deleted
				d.api.put(p)
				d.statuses.SetPodStatus(p, withPhase(statusOf(false), v1.PodSucceeded))
				require.Equal(t, []string{"patch ns/web", "delete ns/web"}, d.sync())
				d.api.put(p) // restored from a backup
			}, func(s *v1.PodStatus) { *s = statusOf(true) }, nil},
		{"a mirror pod terminal and being deleted: not written", true,
			func(d *driftEnv) {
				p := d.api.get("ns", "web")
				p.DeletionTimestamp = &deleted
				d.api.put(p)
			}, func(s *v1.PodStatus) { s.Phase, s.ContainerStatuses = v1.PodSucceeded, nil }, nil},
		{"local status changed since: written as a change, once", false,
			func(d *driftEnv) { d.statuses.SetPodStatus(d.pod, statusOf(false)) },
			func(s *v1.PodStatus) { s.Phase = v1.PodUnknown }, []string{"patch ns/web"}},
		{"static pod without its mirror pod any more: waits", true,
			func(d *driftEnv) { d.mirror = nil }, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDriftEnv(t, tc.static)
			d.statuses.SetPodStatus(d.pod, statusOf(true))
			require.Equal(t, []string{"patch ns/web"}, d.sync())
			tc.setup(d)
			if tc.edit != nil {
				d.overwrite(tc.edit)
			}
			assert.Equal(t, tc.want, d.tick())
			assert.Empty(t, d.tick(), "nothing more")
		})
	}
}
