package podworkers

import (
	"errors"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// State is where a pod is in its life on the node.
type State int

const (
	// Waiting: another pod with the same namespace and name (an older
	// version of a static pod) is still syncing or terminating.
	Waiting State = iota
	// Syncing: the pod is wanted; it is synced when something changes,
	// after a failed sync's back-off, and every resync interval.
	Syncing
	// Terminating: the pod is being killed and removed; a failed try is
	// retried after the back-off until it succeeds and the pod is forgotten.
	Terminating
	// Terminated: the pod was killed on the node's own decision (an
	// eviction: SyncPodKill with KillOptions), or finished (its phase
	// became terminal: ErrPodTerminal), while its source still has it.
	// It is never started again; its source's removal forgets it.
	Terminated
)

func (s State) String() string {
	switch s {
	case Waiting:
		return "Waiting"
	case Syncing:
		return "Syncing"
	case Terminating:
		return "Terminating"
	case Terminated:
		return "Terminated"
	}
	return "Unknown"
}

// podState is one pod's record in the machine.
type podState struct {
	pod         *v1.Pod
	runtimeOnly bool
	state       State
	busy        bool            // a Work is being run
	busyWith    WorkType        // which
	wantSync    bool            // a sync is asked for
	wantKill    bool            // a termination is due
	kill        *KillPodOptions // the node's kill (eviction): the pod stays Terminated after
	finished    bool            // its phase became terminal: it stays Terminated after
	removed     bool            // its source removed it: forgotten once terminated
	grace       int64           // the termination's grace period, seconds (0: none yet)
	due         time.Time       // next resync or retry (zero: none)
	lastSync    time.Time       // when the last Work ended
	updated     bool            // its source changed it since its last SyncPod
}

// machine is the pod workers' state machine: pure, without goroutines,
// I/O or clock reads, so that every ordering rule is a table test. The
// Workers feed it events with the time they happened and run what it says.
type machine struct {
	resync, backOff time.Duration
	jitter          func(time.Duration) time.Duration
	pods            map[types.UID]*podState
}

func newMachine(resync, backOff time.Duration, jitter func(time.Duration) time.Duration) *machine {
	return &machine{resync: resync, backOff: backOff, jitter: jitter, pods: map[types.UID]*podState{}}
}

// update applies an update. It returns the pods that may have work now,
// whether u created a pod record (for which a worker is needed), and
// whether the pod's running Work must be cancelled: a sync of a pod now
// terminating, or a termination whose grace period was shortened (the
// kubelet's UpdatePod cancels in the same two cases). mayRun says, for a
// pod created already Failed or Succeeded, whether the runtime may still
// run something of it (Workers.mayRun).
func (m *machine) update(u Update, mayRun bool) (wake []types.UID, created, cancel bool) {
	uid := u.Pod.UID
	st := m.pods[uid]
	switch u.Type {
	case SyncPodCreate, SyncPodUpdate:
		if st == nil && u.Type == SyncPodCreate {
			st = &podState{pod: u.Pod, state: Syncing, wantSync: true}
			if terminalPhase(u.Pod.Status.Phase) && !mayRun {
				// Finished and terminated before (an evicted or completed
				// API pod seen again after a restart): never started
				// again. One that may still run (the agent stopped between
				// its final status and its termination) is synced: the
				// sync sees the terminal phase (ErrPodTerminal), and the
				// pod is terminated as any pod that finished.
				st.state, st.wantSync = Terminated, false
				m.pods[uid] = st
				return nil, true, false
			}
			if u.Pod.DeletionTimestamp != nil {
				// Deleted while nobody watched (the agent was down): the
				// kubelet's UpdatePod makes it terminating at once; what
				// runs of it is killed, nothing is started.
				st.state, st.wantSync, st.wantKill = Terminating, false, true
				st.grace = effectiveGrace(0, u.Pod, nil)
				m.pods[uid] = st
				return []types.UID{uid}, true, false
			}
			if m.blocked(u.Pod, uid) {
				st.state, st.wantSync = Waiting, false
			}
			m.pods[uid] = st
			return []types.UID{uid}, true, false
		}
		if st == nil || st.state == Terminating || st.state == Terminated {
			return nil, false, false
		}
		st.pod = u.Pod
		st.updated = st.updated || u.Type == SyncPodUpdate
		if st.state == Syncing {
			st.wantSync = true
		}
	case SyncPodSync:
		if st == nil || st.state != Syncing {
			return nil, false, false
		}
		st.wantSync = true
	case SyncPodKill:
		return m.kill(u, st)
	}
	return []types.UID{uid}, false, false
}

// kill applies a SyncPodKill to st (nil: a pod without a record).
func (m *machine) kill(u Update, st *podState) (wake []types.UID, created, cancel bool) {
	uid := u.Pod.UID
	switch {
	case st == nil && u.RuntimeOnly:
		m.pods[uid] = &podState{pod: u.Pod, runtimeOnly: true, state: Terminating, wantKill: true}
		return []types.UID{uid}, true, false
	case st == nil:
		return nil, false, false
	case st.state == Terminating:
		st.removed = st.removed || u.KillOptions == nil
		return m.shorten(u, st)
	case st.state == Terminated && u.KillOptions == nil:
		delete(m.pods, uid) // its source let it go
		return []types.UID{uid}, false, false
	case st.state == Terminated:
		return nil, false, false
	case st.state == Waiting && u.KillOptions == nil:
		// Never started: nothing of it to kill.
		delete(m.pods, uid)
		return append([]types.UID{uid}, m.release(u.Pod)...), false, false
	}
	st.state, st.wantSync, st.wantKill, st.due, st.kill = Terminating, false, true, time.Time{}, u.KillOptions
	st.pod = u.Pod // the deleted pod: its deletion grace period applies
	st.grace = effectiveGrace(0, u.Pod, u.KillOptions)
	return []types.UID{uid}, false, st.busy && st.busyWith == SyncPod
}

// shorten applies a kill of a pod already terminating: a shorter grace
// period (a force deletion, an eviction's override) cuts the termination
// under way short and starts it again at once with the new one.
func (m *machine) shorten(u Update, st *podState) (wake []types.UID, created, cancel bool) {
	if st.runtimeOnly {
		return nil, false, false
	}
	g := effectiveGrace(st.grace, u.Pod, u.KillOptions)
	if g >= st.grace {
		return nil, false, false
	}
	st.grace, st.pod, st.wantKill, st.due = g, u.Pod, true, time.Time{}
	return []types.UID{u.Pod.UID}, false, st.busy && st.busyWith == TerminatePod
}

// effectiveGrace is the kubelet's calculateEffectiveGracePeriod: a
// termination's grace period only ever shortens, to the API server's
// deletion grace period or a kill's override; without either it is the
// pod's own (30 s when unset, as the API defaults it); never under 1 s, so
// a force deletion's 0 is 1.
func effectiveGrace(prev int64, pod *v1.Pod, opts *KillPodOptions) int64 {
	g, overridden := prev, false
	shorten := func(o *int64) {
		if o != nil && (g == 0 || *o < g) {
			g, overridden = *o, true
		}
	}
	shorten(pod.DeletionGracePeriodSeconds)
	if opts != nil {
		shorten(opts.GracePeriodSecondsOverride)
	}
	if !overridden && g == 0 {
		g = v1.DefaultTerminationGracePeriodSeconds
		if pod.Spec.TerminationGracePeriodSeconds != nil {
			g = *pod.Spec.TerminationGracePeriodSeconds
		}
	}
	return max(g, 1)
}

// replace holds pod, the newer object of a known pod that differs only in
// its status, with no work and no update (Updated stays as it was).
func (m *machine) replace(pod *v1.Pod) {
	if st := m.pods[pod.UID]; st != nil && !st.runtimeOnly {
		st.pod = pod
	}
}

// blocked: another pod with pod's namespace and name is syncing or
// terminating, so pod must wait (both must never hold its host ports or
// volumes at once).
func (m *machine) blocked(pod *v1.Pod, uid types.UID) bool {
	for other, st := range m.pods {
		if other != uid && (st.state == Syncing || st.state == Terminating) && st.pod.Name == pod.Name && st.pod.Namespace == pod.Namespace {
			return true
		}
	}
	return false
}

// release starts the waiting pods named like gone that are no longer blocked.
func (m *machine) release(gone *v1.Pod) []types.UID {
	var out []types.UID
	for uid, st := range m.pods {
		if st.state == Waiting && st.pod.Name == gone.Name && st.pod.Namespace == gone.Namespace && !m.blocked(st.pod, uid) {
			st.state, st.wantSync = Syncing, true
			out = append(out, uid)
		}
	}
	return out
}

// next takes the pod's next Work, if it has one and none is running.
// forgotten says the pod has no record any more: its worker ends.
func (m *machine) next(uid types.UID) (w Work, ok, forgotten bool) {
	st := m.pods[uid]
	switch {
	case st == nil:
		return Work{}, false, true
	case st.busy:
		return Work{}, false, false
	case st.state == Terminating && st.wantKill:
		st.wantKill = false
		w = Work{Type: TerminatePod, Pod: st.pod, RuntimeOnly: st.runtimeOnly, KillOptions: st.kill,
			Finished: st.finished && st.kill == nil && !st.removed, GracePeriod: st.grace}
	case st.state == Syncing && st.wantSync:
		st.wantSync = false
		w = Work{Type: SyncPod, Pod: st.pod, Updated: st.updated}
		st.updated = false
	default:
		return Work{}, false, false
	}
	st.busy, st.busyWith = true, w.Type
	w.NewerThan = st.lastSync
	return w, true, false
}

// done records the end, at now, of the pod's running Work. It returns the
// pods that may have work now: the pod itself, or, when a termination
// succeeded and the pod is forgotten, the waiting pods it released.
func (m *machine) done(uid types.UID, now time.Time, err error) (wake []types.UID, forgotten bool) {
	st := m.pods[uid]
	if st == nil || !st.busy {
		return nil, st == nil
	}
	st.busy, st.lastSync = false, now
	switch {
	case st.busyWith == TerminatePod && err == nil && (st.kill != nil || st.finished) && !st.removed:
		st.state, st.wantKill = Terminated, false
		return m.release(st.pod), false
	case st.busyWith == TerminatePod && err == nil:
		delete(m.pods, uid)
		return m.release(st.pod), true
	case st.busyWith == TerminatePod && st.wantKill:
		// Cut short for a shorter grace period: again at once.
	case st.busyWith == TerminatePod:
		st.due = now.Add(m.jitter(m.backOff))
	case st.state == Terminating:
		// Killed during the sync: the termination is already wanted.
	case errors.Is(err, ErrPodTerminal):
		// The kubelet's SyncPod isTerminal: never synced again; its
		// remaining containers are killed, and it then stays Terminated.
		st.state, st.wantSync, st.wantKill, st.finished, st.due = Terminating, false, true, true, time.Time{}
		st.grace = effectiveGrace(0, st.pod, nil)
	case err != nil:
		st.due = now.Add(m.jitter(m.backOff))
	default:
		st.due = now.Add(m.jitter(m.resync))
	}
	return []types.UID{uid}, false
}

// readBack records that the pod's Work just done read its status back
// at at, after its last action (StatusReadAt): the next Work waits for a
// status read at or after at (GetNewerThan is strict, hence the
// nanosecond) instead of after the Work's end.
func (m *machine) readBack(uid types.UID, at time.Time) {
	if st := m.pods[uid]; st != nil && !st.busy && at.Before(st.lastSync) {
		st.lastSync = at.Add(-time.Nanosecond)
	}
}

// abort records that the pod's running Work w was cut short without a
// result (Run's context ended): the Work is wanted again, so that the next
// Run does it.
func (m *machine) abort(uid types.UID, w Work) {
	st := m.pods[uid]
	if st == nil || !st.busy {
		return
	}
	st.busy = false
	switch st.state {
	case Terminating:
		st.wantKill = true
	case Syncing:
		st.wantSync, st.updated = true, st.updated || w.Updated
	}
}

// tick makes the work whose time has come at now due: a resync or a
// retried sync, or a retried termination.
func (m *machine) tick(now time.Time) []types.UID {
	var out []types.UID
	for uid, st := range m.pods {
		if st.due.IsZero() || now.Before(st.due) {
			continue
		}
		st.due = time.Time{}
		switch st.state {
		case Syncing:
			st.wantSync = true
		case Terminating:
			st.wantKill = true
		}
		out = append(out, uid)
	}
	return out
}

func terminalPhase(p v1.PodPhase) bool { return p == v1.PodFailed || p == v1.PodSucceeded }
