package podworkers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
)

// The kubelet's defaults.
const (
	// DefaultResyncInterval is --sync-frequency: each pod is synced at
	// least this often.
	DefaultResyncInterval = time.Minute
	// DefaultBackOffPeriod is how long a failed sync or termination waits
	// before it is tried again (the kubelet's backOffPeriod).
	DefaultBackOffPeriod = 10 * time.Second
	// DefaultJitterFactor spreads resyncs and retries over [d, 1.5d], so
	// pods created together do not sync together forever.
	DefaultJitterFactor = 0.5
	// DefaultTickPeriod is how often Run looks for due work (the kubelet's
	// sync loop ticker).
	DefaultTickPeriod = time.Second
)

// UpdateType says what happened to a pod.
type UpdateType int

const (
	// SyncPodCreate: a new pod to run.
	SyncPodCreate UpdateType = iota
	// SyncPodUpdate: the pod's spec changed.
	SyncPodUpdate
	// SyncPodSync: something about the pod changed (a lifecycle event, a
	// probe result): sync it soon.
	SyncPodSync
	// SyncPodKill: the pod is no longer wanted: terminate it, then forget it.
	SyncPodKill
)

// Update is one change to a pod, given to UpdatePod.
type Update struct {
	Type UpdateType
	Pod  *v1.Pod
	// RuntimeOnly, with SyncPodKill, is a pod only the runtime knows (an
	// orphan): Pod carries just its name, namespace and UID.
	RuntimeOnly bool
	// KillOptions, with SyncPodKill, is a kill the node decided (an
	// eviction) while the pod's source still has it: the pod ends
	// Terminated, not forgotten. KillPodNow sends it and waits.
	KillOptions *KillPodOptions
	// Refused, with SyncPodCreate of a Failed pod, says the pod was
	// refused at admission: it starts Terminated, never synced, without
	// asking the status cache whether something of it runs.
	Refused bool
}

// KillPodOptions are the kubelet's for a kill the node decides: the grace
// period and the final status of an eviction.
type KillPodOptions struct {
	// GracePeriodSecondsOverride, if set, replaces every container's grace
	// period.
	GracePeriodSecondsOverride *int64
	// Status, if set, edits the final status the PodSyncer publishes (phase
	// Failed, reason Evicted: eviction's Eviction.UpdateStatus).
	Status func(*v1.PodStatus)
}

// WorkType is what the PodSyncer is asked to do.
type WorkType int

const (
	// SyncPod: bring the pod's containers in line with its spec.
	SyncPod WorkType = iota
	// TerminatePod: kill the pod and remove what it left.
	TerminatePod
)

func (t WorkType) String() string {
	if t == TerminatePod {
		return "TerminatePod"
	}
	return "SyncPod"
}

// Work is one call to the PodSyncer.
type Work struct {
	Type WorkType
	Pod  *v1.Pod
	// RuntimeOnly: Pod carries only the name, namespace and UID of a pod
	// only the runtime knows.
	RuntimeOnly bool
	// KillOptions, with TerminatePod, is the node's kill (an eviction).
	KillOptions *KillPodOptions
	// GracePeriod, with TerminatePod of a pod from a source, is the
	// termination's grace period in seconds, the kubelet's effective one:
	// the deletion's, a kill's override or the pod's own, never under 1,
	// and only ever shorter than an earlier try's. 0 for a RuntimeOnly pod:
	// its containers' own.
	GracePeriod int64
	// Finished, with TerminatePod, is the termination of a pod whose
	// phase became terminal (its SyncPod returned ErrPodTerminal) while
	// its source still has it: its remaining containers (sidecars) are to
	// be killed, but may stay in the runtime, with their logs, until the
	// pod is removed. The pod then stays Terminated.
	Finished bool
	// Updated, with SyncPod, says the pod's source changed it (an UPDATE)
	// since its previous SyncPod: the kubelet's SyncPodUpdate. A
	// status-only change (ReplacePod) is no update.
	Updated bool
	// Status is the runtime's status of the pod from the status cache, newer
	// than the end of the pod's previous Work (NewerThan).
	Status    *kc.PodStatus
	NewerThan time.Time
}

// ErrPodTerminal, returned by a SyncPod (wrapped or not), says the pod's
// phase is terminal (Succeeded, Failed): the kubelet's SyncPod returning
// isTerminal. The pod is not synced again: it becomes Terminating, a
// TerminatePod with Finished follows, and it then stays Terminated, never
// started again, until its source removes it.
var ErrPodTerminal = errors.New("the pod reached a terminal phase")

// PodSyncer does the work. An error means "try again after the back-off",
// but for ErrPodTerminal; a TerminatePod that returns nil is the pod's
// last Work.
type PodSyncer interface {
	Sync(ctx context.Context, w Work) error
}

// PodSyncerFunc adapts a function to a PodSyncer.
type PodSyncerFunc func(ctx context.Context, w Work) error

// Sync calls f.
func (f PodSyncerFunc) Sync(ctx context.Context, w Work) error { return f(ctx, w) }

// StatusCache is where the workers read pod statuses; *statuscache.Cache
// implements it. GetNewerThan blocks until the cache holds a status of the
// pod read after minTime, or ctx ends; asked with a ctx already done, it
// answers at once with what it holds, or ctx's error if it holds nothing.
type StatusCache interface {
	GetNewerThan(ctx context.Context, uid types.UID, minTime time.Time) (*kc.PodStatus, error)
}

// Config configures Workers; zero fields take the kubelet's defaults.
type Config struct {
	PodSyncer PodSyncer
	Cache     StatusCache
	Clock     clock.WithTicker
	// ResyncInterval is how often each pod is synced when nothing happens.
	ResyncInterval time.Duration
	// BackOffPeriod is the wait before a failed Work is tried again.
	BackOffPeriod time.Duration
	// Jitter stretches each resync and retry wait; default: up to half
	// again (DefaultJitterFactor). Tests pass func(d) d.
	Jitter func(time.Duration) time.Duration
	// TickPeriod is how often Run looks for due work.
	TickPeriod time.Duration
	// OnDone, if set, is called in the pod's worker after each Work's
	// result is recorded (its retry or resync scheduled), e.g. to count or
	// time syncs. It must not block.
	OnDone func(w Work, took time.Duration, err error)
	Log    logr.Logger
}

// Workers runs each pod's work on a worker goroutine of its own, one Work
// at a time: it serializes everything done to that pod. Unlike the
// kubelet's, a pod's goroutine lives only while the pod has work: an idle
// pod (nearly all of them, between resyncs) costs no goroutine stack, which
// matters with hundreds of pods or hollow nodes in one process.
//
// The ordering rules, which the state machine in machine.go enforces and
// its table tests pin:
//
//  1. A pod's Work runs one at a time. Updates that arrive during a Work
//     merge into at most one more Work after it.
//  2. A Work runs only once the status cache holds a status of the pod
//     read after the end of the pod's previous Work (GetNewerThan), so
//     each sync acts on what the previous one did, never on a stale view;
//     or, when that Work's Sync said it read the status back after its
//     last action (StatusReadAt), one read at or after then.
//  3. A pod is synced when it is created or updated, when SyncPodSync says
//     something changed (a lifecycle event, a probe result), after a failed
//     sync's BackOffPeriod, and ResyncInterval after its last successful
//     sync. The last two are jittered and started by Tick (Run calls it
//     every TickPeriod, as the kubelet's sync loop ticker does).
//  4. SyncPodKill makes the pod Terminating: a sync in progress is
//     cancelled (its context ends: an image pull is not waited for), then
//     TerminatePod is run with the effective grace period (Work.GracePeriod:
//     the kubelet's calculateEffectiveGracePeriod, at least 1 s), and
//     retried after the back-off until it succeeds. A later kill with a
//     shorter grace period (a force deletion) cancels the termination under
//     way and runs it again at once. Then the pod is forgotten, and updates
//     for it are ignored. A Work cut short by Run's end is done by the next
//     Run.
//  5. A pod whose namespace and name belong to another pod still syncing
//     or terminating (a static pod's new version, with a new UID) waits in
//     Waiting until that pod is forgotten, so both never hold the same
//     host ports or volumes. A waiting pod that is killed never started:
//     it is forgotten without a TerminatePod.
//  6. SyncPodKill with RuntimeOnly terminates a pod only the runtime
//     knows (an orphan found by housekeeping).
//  7. SyncPodKill with KillOptions is a kill the node decides while the
//     pod's source still has it (an eviction; KillPodNow sends it and
//     waits): the TerminatePod carries the options (grace period, final
//     status), and the pod then stays Terminated, never started again
//     and no longer among Pods, until a plain SyncPodKill (its source's
//     removal) forgets it. A Terminated pod blocks no new version. A
//     pod created with a terminal phase (Failed, Succeeded: an API pod
//     that finished before a restart) starts Terminated if the status
//     cache shows nothing of it running (the kubelet's
//     isPodStatusCacheTerminal) or it was Refused at admission, else it is
//     synced and terminated as in 8;
//     one created with a deletion timestamp (deleted while the agent was
//     down) starts Terminating, never synced.
//  8. A SyncPod that returns ErrPodTerminal (the pod's phase became
//     Succeeded or Failed: the kubelet's SyncPod isTerminal) makes the pod
//     Terminating: a TerminatePod with Finished kills what still runs (a
//     sidecar), and the pod then stays Terminated as in 7, never synced
//     or started again, until its source's removal forgets it.
type Workers struct {
	cfg Config

	mu sync.Mutex
	m  *machine
	// ctx is set by Run; workers start once it is, and no more once Run
	// is stopping.
	ctx      context.Context
	stopping bool
	// workers holds one record per pod: a forgotten pod's goroutine sees
	// its record gone (or replaced, when the UID comes back).
	workers map[types.UID]*podWorker
	waiters map[types.UID][]chan struct{} // KillPodNow callers, until the pod is terminated
	running sync.WaitGroup
}

// New returns Workers with the kubelet's defaults filled in.
func New(cfg Config) (*Workers, error) {
	if cfg.PodSyncer == nil || cfg.Cache == nil {
		return nil, errors.New("podworkers: PodSyncer and Cache are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	for name, d := range map[string]*time.Duration{"ResyncInterval": &cfg.ResyncInterval,
		"BackOffPeriod": &cfg.BackOffPeriod, "TickPeriod": &cfg.TickPeriod} {
		if *d < 0 {
			return nil, fmt.Errorf("podworkers: %s: invalid value %s: must not be negative", name, *d)
		}
	}
	if cfg.ResyncInterval == 0 {
		cfg.ResyncInterval = DefaultResyncInterval
	}
	if cfg.BackOffPeriod == 0 {
		cfg.BackOffPeriod = DefaultBackOffPeriod
	}
	if cfg.TickPeriod == 0 {
		cfg.TickPeriod = DefaultTickPeriod
	}
	if cfg.Jitter == nil {
		cfg.Jitter = func(d time.Duration) time.Duration { return wait.Jitter(d, DefaultJitterFactor) }
	}
	return &Workers{cfg: cfg, m: newMachine(cfg.ResyncInterval, cfg.BackOffPeriod, cfg.Jitter),
		workers: map[types.UID]*podWorker{}, waiters: map[types.UID][]chan struct{}{}}, nil
}

// UpdatePod tells the workers what happened to a pod. It never blocks.
func (w *Workers) UpdatePod(u Update) {
	if u.Pod == nil {
		return
	}
	mayRun := u.Type == SyncPodCreate && terminalPhase(u.Pod.Status.Phase) && !u.Refused && w.mayRun(u.Pod.UID)
	w.mu.Lock()
	defer w.mu.Unlock()
	wake, created, cancel := w.m.update(u, mayRun)
	if pw := w.workers[u.Pod.UID]; cancel && pw != nil && pw.cancel != nil {
		// The kubelet's: a sync of a pod now terminating, or a termination
		// whose grace period was shortened, is cancelled, not waited for.
		w.cfg.Log.V(3).Info("cancelling the pod's running work", "pod", klogRef(u.Pod))
		pw.cancel()
	}
	w.wakeLocked(wake)
	if _, kept := w.m.pods[u.Pod.UID]; !kept {
		delete(w.workers, u.Pod.UID) // forgotten (killed while waiting): a running worker ends
	}
	if created {
		w.workers[u.Pod.UID] = &podWorker{}
		w.startLocked(u.Pod.UID)
	}
	w.notifyLocked(u.Pod.UID)
}

// mayRun is the kubelet's !isPodStatusCacheTerminal, asked about a pod
// that arrives Failed or Succeeded: whether the status cache shows a
// container of it running or a sandbox ready, or holds an error for it,
// so that it must be synced and terminated rather than taken for done.
// As the kubelet's, a cache that holds nothing yet (no relist since the
// agent started) shows nothing running: syncing every finished pod then
// would republish the statuses of pods long done. The caller sends no
// update before the first relist, as the kubelet's syncLoop waits for a
// healthy PLEG (nodeagent.Agent.Run does).
func (w *Workers) mayRun(uid types.UID) bool {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // what the cache holds now, without waiting for a relist
	st, err := w.cfg.Cache.GetNewerThan(ctx, uid, time.Time{})
	switch {
	case errors.Is(err, context.Canceled):
		return false // nothing cached yet
	case err != nil || st == nil:
		return true
	}
	return st.AnySandboxReady() || slices.ContainsFunc(st.ContainerStatuses,
		func(c *kc.ContainerStatus) bool { return c.State == kc.ContainerStateRunning })
}

// KillPodNow kills pod on the node's own decision (an eviction) and waits
// until it is terminated, as the kubelet's killPodNow: for at most its
// grace period and half again, and never less than 10 s. The pod stays
// Terminated, not started again, until its source removes it. A pod the
// workers do not have, or have terminated, returns at once.
func (w *Workers) KillPodNow(ctx context.Context, pod *v1.Pod, opts KillPodOptions) error {
	grace := int64(0)
	switch {
	case opts.GracePeriodSecondsOverride != nil:
		grace = *opts.GracePeriodSecondsOverride
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	timeout := max(grace+grace/2, killPodNowMinTimeout)
	w.mu.Lock()
	done := make(chan struct{})
	w.waiters[pod.UID] = append(w.waiters[pod.UID], done)
	w.mu.Unlock()
	w.UpdatePod(Update{Type: SyncPodKill, Pod: pod, KillOptions: &opts}) // notifies when there is nothing to wait for
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		w.dropWaiter(pod.UID, done)
		return ctx.Err()
	case <-w.cfg.Clock.After(time.Duration(timeout) * time.Second):
		w.dropWaiter(pod.UID, done)
		return fmt.Errorf("pod %s was not terminated within %ds", klogRef(pod), timeout)
	}
}

// dropWaiter forgets a KillPodNow caller that stopped waiting, so that
// callers that give up do not pile up behind a pod never terminated.
func (w *Workers) dropWaiter(uid types.UID, done chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	list := slices.DeleteFunc(w.waiters[uid], func(ch chan struct{}) bool { return ch == done })
	if len(list) == 0 {
		delete(w.waiters, uid)
	} else {
		w.waiters[uid] = list
	}
}

// killPodNowMinTimeout is the kubelet's shortest wait in killPodNow, in seconds.
const killPodNowMinTimeout = 10

// notifyLocked releases the KillPodNow callers of a pod that is
// terminated, or that the workers do not have.
func (w *Workers) notifyLocked(uid types.UID) {
	if st := w.m.pods[uid]; st != nil && st.state != Terminated {
		return
	}
	for _, ch := range w.waiters[uid] {
		close(ch)
	}
	delete(w.waiters, uid)
}

// Sync asks for a sync of the pod uid, if the workers have it syncing:
// SyncPodSync for events that carry only a UID (a lifecycle event, a probe
// result).
func (w *Workers) Sync(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.m.pods[uid]
	if st == nil {
		return
	}
	wake, _, _ := w.m.update(Update{Type: SyncPodSync, Pod: st.pod}, false)
	w.wakeLocked(wake)
}

// ReplacePod swaps the pod object the workers hold for pod, an equal one
// but for its status (a RECONCILE from its source), without work: the old
// object is no longer held.
func (w *Workers) ReplacePod(pod *v1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.m.replace(pod)
}

// Run looks for due work every TickPeriod until ctx ends, then waits for
// every worker to return (a Work in progress sees ctx end) and returns
// nil. A second Run while one runs returns an error.
func (w *Workers) Run(ctx context.Context) error {
	w.mu.Lock()
	if w.ctx != nil && w.ctx.Err() == nil {
		w.mu.Unlock()
		return errors.New("podworkers: Run is already running")
	}
	w.ctx = ctx
	for uid := range w.workers {
		w.startLocked(uid)
	}
	w.mu.Unlock()
	ticker := w.cfg.Clock.NewTicker(w.cfg.TickPeriod)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			w.mu.Lock()
			w.stopping = true // no worker starts after this: Wait is safe
			w.mu.Unlock()
			w.running.Wait()
			w.mu.Lock()
			w.stopping = false
			w.mu.Unlock()
			return nil
		case <-ticker.C():
			w.Tick()
		}
	}
}

// Tick starts the work whose time has come: resyncs and retries. Run calls
// it every TickPeriod; a caller driving its own loop may call it instead.
func (w *Workers) Tick() {
	now := w.cfg.Clock.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.wakeLocked(w.m.tick(now))
}

// State returns the pod's state; ok is false for a pod the workers do not
// have (never told, or terminated and forgotten).
func (w *Workers) State(uid types.UID) (s State, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.m.pods[uid]
	if st == nil {
		return 0, false
	}
	return st.state, true
}

// Pods returns the pods that are wanted: syncing, or waiting for an older
// version to go (the kubelet's active pods). The pods are shared: do not
// modify them.
func (w *Workers) Pods() []*v1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*v1.Pod, 0, len(w.m.pods))
	for _, st := range w.m.pods {
		if st.state == Syncing || st.state == Waiting {
			out = append(out, st.pod)
		}
	}
	return out
}

// SourcePods returns every pod its source still has, in any state:
// wanted, waiting, being killed by the node, or done (Terminated: finished
// or evicted), but not a pod its source removed nor a runtime-only orphan.
// They are the kubelet's pod manager's pods: those the node's API lists
// and serves logs for, so a completed Job's logs stay readable.
func (w *Workers) SourcePods() []*v1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*v1.Pod, 0, len(w.m.pods))
	for _, st := range w.m.pods {
		if sourceHas(st) {
			out = append(out, st.pod)
		}
	}
	return out
}

// sourceHas says whether st's source still has the pod: a termination
// that is neither the node's (a kill with options) nor a finished pod's
// comes from its source's removal.
func sourceHas(st *podState) bool {
	if st.runtimeOnly || st.removed {
		return false
	}
	return st.state != Terminating || st.kill != nil || st.finished
}

// ActivePods returns the pods whose resources and host ports a new pod
// must fit beside (the kubelet's filterOutInactivePods, which admission
// reads): the wanted pods and those still terminating, whose containers
// may run yet; not the terminated ones, nor the orphans only the runtime
// has. The pods are shared: do not modify them.
func (w *Workers) ActivePods() []*v1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*v1.Pod, 0, len(w.m.pods))
	for _, st := range w.m.pods {
		if st.state == Syncing || st.state == Waiting || (st.state == Terminating && !st.runtimeOnly) {
			out = append(out, st.pod)
		}
	}
	return out
}

// IsTerminated reports whether the workers are done with the pod: it is
// Terminated, or they do not have it (never told, or forgotten). It is the
// eviction manager's "cleaned up": a termination removes the containers,
// volumes and cgroup before it ends.
func (w *Workers) IsTerminated(pod *v1.Pod) bool {
	s, ok := w.State(pod.UID)
	return !ok || s == Terminated
}

// Known returns the UIDs of every pod the workers have, terminating and
// terminated ones included: what a clean-up of runtime pods, cgroups or
// logs must spare, and whose statuses are kept.
func (w *Workers) Known() map[types.UID]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[types.UID]bool, len(w.m.pods))
	for uid := range w.m.pods {
		out[uid] = true
	}
	return out
}

// podWorker is one pod record's worker state, guarded by Workers.mu.
type podWorker struct {
	busy   bool               // a goroutine runs the pod's work
	cancel context.CancelFunc // cancels the Work running, if any
}

// startLocked starts the pod's worker, once Run has given a context,
// unless it has one running (which looks for work again before it ends).
func (w *Workers) startLocked(uid types.UID) {
	pw, ok := w.workers[uid]
	if w.ctx == nil || w.stopping || !ok || pw.busy {
		return
	}
	ctx := w.ctx
	pw.busy = true
	w.running.Add(1)
	go func() {
		defer w.running.Done()
		w.work(ctx, uid, pw)
	}()
}

func (w *Workers) wakeLocked(uids []types.UID) {
	for _, uid := range uids {
		w.startLocked(uid)
	}
}

// work is one pod's worker: it runs the pod's Work, one at a time, while
// there is some, and ends when there is none (the next update or due time
// starts a worker again), when the pod is forgotten, or when ctx ends.
func (w *Workers) work(ctx context.Context, uid types.UID, pw *podWorker) {
	for {
		w.mu.Lock()
		if w.workers[uid] != pw {
			pw.busy = false
			w.mu.Unlock()
			return // forgotten; the UID may have come back with its own worker
		}
		var work Work
		ok := false
		if ctx.Err() == nil { // else the Work would be taken and never done
			work, ok, _ = w.m.next(uid)
		}
		if !ok {
			// Under the lock, and only here: a wake from now on starts a
			// worker, which must not find its busy mark cleared by this one.
			pw.busy = false
			w.mu.Unlock()
			return
		}
		workCtx, cancel := context.WithCancel(ctx)
		pw.cancel = cancel
		w.mu.Unlock()
		workCtx, readBack := withReadBack(workCtx)
		began := w.cfg.Clock.Now()
		err := w.run(workCtx, &work)
		cancel()
		if ctx.Err() != nil {
			// Cut short by Run's end: wanted again by the next Run.
			w.mu.Lock()
			pw.busy, pw.cancel = false, nil
			if w.workers[uid] == pw {
				w.m.abort(uid, work)
			}
			w.mu.Unlock()
			return
		}
		now := w.cfg.Clock.Now()
		w.mu.Lock()
		pw.cancel = nil
		again, forgotten := w.m.done(uid, now, err)
		if at := readBack.at.Load(); at != nil {
			w.m.readBack(uid, *at)
		}
		if forgotten {
			w.forgetLocked(uid, pw)
		}
		w.wakeLocked(again) // other pods (a waiting version); this one is busy: it looks again itself
		w.notifyLocked(uid)
		w.mu.Unlock()
		if w.cfg.OnDone != nil {
			w.cfg.OnDone(work, now.Sub(began), err)
		}
		if forgotten {
			w.mu.Lock()
			pw.busy = false
			w.mu.Unlock()
			return
		}
	}
}

// forgetLocked drops a forgotten pod's record.
func (w *Workers) forgetLocked(uid types.UID, pw *podWorker) {
	if w.workers[uid] == pw {
		delete(w.workers, uid)
	}
}

// run waits for a status newer than the pod's last Work, then runs work.
func (w *Workers) run(ctx context.Context, work *Work) error {
	status, err := w.cfg.Cache.GetNewerThan(ctx, work.Pod.UID, work.NewerThan)
	if err != nil {
		return fmt.Errorf("reading the status of pod %s/%s: %w", work.Pod.Namespace, work.Pod.Name, err)
	}
	work.Status = status
	if err := w.cfg.PodSyncer.Sync(ctx, *work); err != nil {
		if errors.Is(err, ErrPodTerminal) {
			w.cfg.Log.V(1).Info("pod is terminal, terminating it", "pod", klogRef(work.Pod))
			return err
		}
		if ctx.Err() == nil {
			w.cfg.Log.V(1).Info("pod work failed, retried after the back-off", "pod", klogRef(work.Pod),
				"work", work.Type, "error", err.Error())
		}
		return err
	}
	return nil
}

func klogRef(p *v1.Pod) string { return p.Namespace + "/" + p.Name }
