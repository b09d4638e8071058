package podworkers

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Pods of the machine tests: a2 is a new version of a (same name, new
// UID), as when a static pod's manifest is edited.
var testPods = map[string]*v1.Pod{
	"a":  {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "a"}},
	"a2": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "a2"}},
	"a3": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "a3"}},
	"b":  {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db", UID: "b"}},
	"x":  {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "orphan", UID: "x"}},
	"f":  {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "done", UID: "f"}, Status: v1.PodStatus{Phase: v1.PodFailed}},
}

// TestMachine runs scripts of events against the state machine. Each line
// is an event and what it must give:
//
//	create|update|sync|kill|orphan|evict <pod> [grace=N] [running]
//	                                      -> the pods woken, and "cancel" if
//	                                         the pod's running Work is cancelled
//	next <pod>                            -> the Work taken, or "none"
//	done <pod> <time> ok|err|terminal     -> the pods woken
//	abort <pod>                           -> (the running Work cut short)
//	tick <time>                           -> the pods woken
//	state <pod>                           -> its State, or "gone"
//
// grace=N on a create or kill is the pod's deletionGracePeriodSeconds (it
// is deleted), on an evict the kill's override; running on a create says
// the status cache shows something of the pod running. A TerminatePod shows its grace period when it
// is not the default 30 s. The resync interval is 60s and the back-off
// 10s, with no jitter.
func TestMachine(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
	}{{"a pod is synced at once, then every resync interval after its last sync", `
		create a          -> a
		next a            -> SyncPod newer-than never
		next a            -> none
		done a 5s ok      -> a
		next a            -> none
		tick 64s          ->
		tick 65s          -> a
		next a            -> SyncPod newer-than 5s
		state a           -> Syncing`,
	}, {"kubelet SyncPodUpdate: the first sync after its source changed the pod is an update, once", `
		create a          -> a
		next a            -> SyncPod newer-than never
		update a          -> a
		done a 5s ok      -> a
		next a            -> SyncPod newer-than 5s updated
		done a 6s ok      -> a
		sync a            -> a
		next a            -> SyncPod newer-than 6s`,
	}, {"a failed sync is retried after the back-off", `
		create a          -> a
		next a            -> SyncPod newer-than never
		done a 1s err     -> a
		tick 10s          ->
		tick 11s          -> a
		next a            -> SyncPod newer-than 1s
		done a 12s ok     -> a
		tick 30s          ->
		tick 72s          -> a`,
	}, {"events during a sync give one more sync after it, not two", `
		create a          -> a
		next a            -> SyncPod newer-than never
		sync a            -> a
		update a          -> a
		next a            -> none
		done a 2s ok      -> a
		next a            -> SyncPod newer-than 2s updated
		next a            -> none`,
	}, {"a new version waits until the old one is terminated and forgotten", `
		create a          -> a
		next a            -> SyncPod newer-than never
		done a 1s ok      -> a
		create a2         -> a2
		state a2          -> Waiting
		next a2           -> none
		sync a2           ->
		kill a            -> a
		next a            -> TerminatePod newer-than 1s
		done a 3s err     -> a
		state a2          -> Waiting
		tick 12s          ->
		tick 13s          -> a
		next a            -> TerminatePod newer-than 3s
		done a 14s ok     -> a2
		state a           -> gone
		next a2           -> SyncPod newer-than never
		state a2          -> Syncing`,
	}, {"a version killed while it waits is forgotten without a termination", `
		create a          -> a
		create a2         -> a2
		kill a2           -> a2
		state a2          -> gone
		next a2           -> none
		state a           -> Syncing
		create a3         -> a3
		kill a            -> a
		next a            -> TerminatePod newer-than never
		done a 1s ok      -> a3
		next a3           -> SyncPod newer-than never`,
	}, {"a kill during a sync terminates right after it; updates after a kill are ignored", `
		create a          -> a
		next a            -> SyncPod newer-than never
		kill a            -> a cancel
		update a          ->
		sync a            ->
		state a           -> Terminating
		next a            -> none
		done a 1s ok      -> a
		next a            -> TerminatePod newer-than 1s
		tick 200s         ->
		done a 2s ok      ->
		state a           -> gone
		next a            -> none`,
	}, {"an orphan only the runtime knows is terminated once, then forgotten", `
		orphan x          -> x
		orphan x          ->
		next x            -> TerminatePod newer-than never runtime-only
		done x 1s ok      ->
		state x           -> gone
		sync x            ->
		kill x            ->`,
	}, {"an evicted pod stays Terminated while its source has it, until the source removes it", `
		create a          -> a
		next a            -> SyncPod newer-than never
		done a 1s ok      -> a
		evict a           -> a
		state a           -> Terminating
		next a            -> TerminatePod newer-than 1s evicted
		evict a           ->
		update a          ->
		done a 2s ok      ->
		state a           -> Terminated
		next a            -> none
		update a          ->
		create a          ->
		sync a            ->
		evict a           ->
		tick 500s         ->
		state a           -> Terminated
		kill a            -> a
		state a           -> gone
		next a            -> none`,
	}, {"an evicted pod does not block a new version; a failed eviction is retried", `
		create a          -> a
		create a2         -> a2
		next a            -> SyncPod newer-than never
		evict a           -> a cancel
		done a 1s ok      -> a
		next a            -> TerminatePod newer-than 1s evicted
		done a 2s err     -> a
		state a2          -> Waiting
		tick 12s          -> a
		next a            -> TerminatePod newer-than 2s evicted
		done a 13s ok     -> a2
		state a           -> Terminated
		next a2           -> SyncPod newer-than never`,
	}, {"a pod its source removes while it is being evicted is forgotten once terminated", `
		create a          -> a
		evict a           -> a
		kill a            ->
		next a            -> TerminatePod newer-than never evicted
		done a 1s ok      ->
		state a           -> gone`,
	}, {"a waiting pod that is evicted is terminated, not just forgotten", `
		create a          -> a
		create a2         -> a2
		evict a2          -> a2
		next a2           -> TerminatePod newer-than never evicted
		done a2 1s ok     ->
		state a2          -> Terminated
		state a           -> Syncing`,
	}, {"a pod already terminal in its source (after a restart) is never started", `
		create f          ->
		state f           -> Terminated
		next f            -> none
		update f          ->
		sync f            ->
		tick 500s         ->
		kill f            -> f
		state f           -> gone`,
	}, {"kubelet UpdatePod isPodStatusCacheTerminal: a pod terminal in its source whose sandbox still runs (the agent stopped before terminating it) is synced, then terminated", `
		create f running  -> f
		state f           -> Syncing
		next f            -> SyncPod newer-than never
		done f 1s terminal -> f
		state f           -> Terminating
		next f            -> TerminatePod newer-than 1s finished
		done f 2s ok      ->
		state f           -> Terminated
		update f          ->
		kill f            -> f
		state f           -> gone`,
	}, {"kubelet SyncPod isTerminal, pod_workers terminating -> terminated: a pod whose phase became terminal is terminated, then stays Terminated until its source removes it", `
		create a          -> a
		next a            -> SyncPod newer-than never
		done a 1s ok      -> a
		sync a            -> a
		next a            -> SyncPod newer-than 1s
		done a 2s terminal -> a
		state a           -> Terminating
		next a            -> TerminatePod newer-than 2s finished
		update a          ->
		sync a            ->
		done a 3s ok      ->
		state a           -> Terminated
		next a            -> none
		tick 500s         ->
		update a          ->
		create a          ->
		sync a            ->
		state a           -> Terminated
		kill a            -> a
		state a           -> gone
		next a            -> none`,
	}, {"kubelet pod_workers: a finished pod's failed termination is retried; terminated, it blocks no new version", `
		create a          -> a
		create a2         -> a2
		next a            -> SyncPod newer-than never
		done a 1s terminal -> a
		state a2          -> Waiting
		next a            -> TerminatePod newer-than 1s finished
		done a 2s err     -> a
		tick 12s          -> a
		next a            -> TerminatePod newer-than 2s finished
		done a 13s ok     -> a2
		state a           -> Terminated
		next a2           -> SyncPod newer-than never`,
	}, {"a finished pod its source removes before its termination is terminated as removed, then forgotten", `
		create a          -> a
		next a            -> SyncPod newer-than never
		done a 1s terminal -> a
		kill a            ->
		next a            -> TerminatePod newer-than 1s
		done a 2s ok      ->
		state a           -> gone`,
	}, {"a sync killed while it ran that ends terminal is terminated as killed", `
		create a          -> a
		next a            -> SyncPod newer-than never
		kill a            -> a cancel
		done a 1s terminal -> a
		next a            -> TerminatePod newer-than 1s
		done a 2s ok      ->
		state a           -> gone`,
	}, {"kubelet UpdatePod: a deletion during a sync (a long image pull) cancels it; the termination follows at once", `
		create a          -> a
		next a            -> SyncPod newer-than never
		kill a grace=30   -> a cancel
		state a           -> Terminating
		done a 1s err     -> a
		next a            -> TerminatePod newer-than 1s`,
	}, {"kubelet calculateEffectiveGracePeriod: a shorter grace period during a termination (a force deletion: 1 s) cuts it short and starts it again at once; a longer one changes nothing", `
		create a          -> a
		next a            -> SyncPod newer-than never
		done a 1s ok      -> a
		kill a grace=20   -> a
		next a            -> TerminatePod newer-than 1s grace=20
		kill a grace=25   ->
		kill a            ->
		kill a grace=0    -> a cancel
		next a            -> none
		done a 2s err     -> a
		next a            -> TerminatePod newer-than 2s grace=1
		kill a grace=0    ->
		done a 3s ok      ->
		state a           -> gone`,
	}, {"kubelet calculateEffectiveGracePeriod: an eviction's override shortens a deletion's grace period; a shorter one ends a back-off wait", `
		create a          -> a
		kill a grace=20   -> a
		next a            -> TerminatePod newer-than never grace=20
		evict a grace=5   -> a cancel
		done a 1s err     -> a
		next a            -> TerminatePod newer-than 1s grace=5
		done a 2s err     -> a
		kill a grace=3    -> a
		next a            -> TerminatePod newer-than 2s grace=3
		done a 3s ok      ->
		state a           -> gone`,
	}, {"a finished pod its source removes during its termination is forgotten once terminated", `
		create a          -> a
		next a            -> SyncPod newer-than never
		done a 1s terminal -> a
		next a            -> TerminatePod newer-than 1s finished
		kill a            ->
		done a 2s ok      ->
		state a           -> gone`,
	}, {"a Work cut short by Run's end is wanted again by the next Run", `
		create a          -> a
		next a            -> SyncPod newer-than never
		abort a           ->
		next a            -> SyncPod newer-than never
		done a 1s ok      -> a
		kill a            -> a
		next a            -> TerminatePod newer-than 1s
		abort a           ->
		state a           -> Terminating
		next a            -> TerminatePod newer-than 1s
		done a 2s ok      ->
		state a           -> gone`,
	}, {"kubelet UpdatePod: a pod first seen deleted (its deletion came while the agent was down) is terminating at once, never synced", `
		create a grace=20 -> a
		state a           -> Terminating
		next a            -> TerminatePod newer-than never grace=20
		update a          ->
		sync a            ->
		done a 1s ok      ->
		state a           -> gone`,
	}, {"pods do not wait for each other", `
		create a          -> a
		create b          -> b
		next a            -> SyncPod newer-than never
		next b            -> SyncPod newer-than never
		done b 1s err     -> b
		done a 2s ok      -> a
		tick 11s          -> b
		tick 62s          -> a`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMachine(time.Minute, 10*time.Second, func(d time.Duration) time.Duration { return d })
			start := time.Unix(1700000000, 0)
			for _, line := range strings.Split(strings.TrimSpace(tc.script), "\n") {
				event, want, _ := strings.Cut(line, "->")
				f := strings.Fields(event)
				pod := testPods[f[1]]
				var got string
				switch f[0] {
				case "create", "update", "sync", "kill", "orphan", "evict":
					typ := map[string]UpdateType{"create": SyncPodCreate, "update": SyncPodUpdate, "sync": SyncPodSync,
						"kill": SyncPodKill, "orphan": SyncPodKill, "evict": SyncPodKill}[f[0]]
					mayRun := f[len(f)-1] == "running"
					if mayRun {
						f = f[:len(f)-1]
					}
					u := Update{Type: typ, Pod: pod, RuntimeOnly: f[0] == "orphan"}
					if f[0] == "evict" {
						u.KillOptions = &KillPodOptions{}
					}
					if len(f) > 2 {
						g := graceArg(t, f[2])
						if u.KillOptions != nil {
							u.KillOptions.GracePeriodSecondsOverride = &g
						} else {
							deleted := pod.DeepCopy()
							deleted.DeletionTimestamp, deleted.DeletionGracePeriodSeconds = &metav1.Time{}, &g
							u.Pod = deleted
						}
					}
					wake, _, cancel := m.update(u, mayRun)
					got = uids(wake)
					if cancel {
						got = strings.TrimSpace(got + " cancel")
					}
				case "next":
					w, ok, _ := m.next(pod.UID)
					got = "none"
					if ok {
						since := "never"
						if !w.NewerThan.IsZero() {
							since = w.NewerThan.Sub(start).String()
						}
						got = fmt.Sprintf("%s newer-than %s", w.Type, since)
						if w.RuntimeOnly {
							got += " runtime-only"
						}
						if w.KillOptions != nil {
							got += " evicted"
						}
						if w.Finished {
							got += " finished"
						}
						if w.Updated {
							got += " updated"
						}
						if w.Type == TerminatePod && !w.RuntimeOnly && w.GracePeriod != 30 {
							got += fmt.Sprintf(" grace=%d", w.GracePeriod)
						}
					}
				case "done":
					var err error
					switch f[3] {
					case "err":
						err = errors.New("failed")
					case "terminal":
						err = fmt.Errorf("pod ns/web: %w", ErrPodTerminal)
					}
					wake, _ := m.done(pod.UID, start.Add(duration(t, f[2])), err)
					got = uids(wake)
				case "abort":
					m.abort(pod.UID, Work{})
				case "tick":
					got = uids(m.tick(start.Add(duration(t, f[1]))))
				case "state":
					got = "gone"
					if st := m.pods[pod.UID]; st != nil {
						got = st.state.String()
					}
				default:
					t.Fatalf("bad line %q", line)
				}
				require.Equal(t, strings.TrimSpace(want), got, "after %q", strings.TrimSpace(line))
			}
		})
	}
}

func graceArg(t *testing.T, s string) int64 {
	var g int64
	_, err := fmt.Sscanf(s, "grace=%d", &g)
	require.NoError(t, err, "bad grace %q", s)
	return g
}

func uids(us []types.UID) string {
	s := make([]string, len(us))
	for i, u := range us {
		s[i] = string(u)
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}

func duration(t *testing.T, s string) time.Duration {
	d, err := time.ParseDuration(s)
	require.NoError(t, err)
	return d
}
