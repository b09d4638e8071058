package podstatus

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
)

// The kubelet's defaults for writing statuses to the API server.
const (
	// DefaultSyncPeriod is how often an APIWriter goes over every pod even
	// when nothing was published (the status manager's syncPeriod).
	DefaultSyncPeriod = 10 * time.Second
	// DefaultSyncBackOff is the wait before a failed write is tried
	// again; it doubles with each failure in a row, up to MaxBackOff
	// (default: SyncPeriod, so a failing pod is tried about as often as
	// the kubelet's batch retries it).
	DefaultSyncBackOff = time.Second
	// DefaultSyncJitterFactor stretches each back-off by up to half, so
	// pods that failed together are not retried together.
	DefaultSyncJitterFactor = 0.5
	// DefaultWriters is how many pods' statuses are written at once (the
	// kubelet writes one at a time); the API client's QPS limit still
	// bounds the rate.
	DefaultWriters = 8
)

// PodAPI is the part of the API server an APIWriter uses; package
// podstatus/apiclient adapts the API client (kubeapi). For a pod that does
// not exist, the error is the API server's NotFound (apierrors.IsNotFound);
// for a patch whose UID is not the pod's, Conflict. The APIWriter does not
// modify the pods returned, and calls it from several goroutines at once.
type PodAPI interface {
	GetPod(ctx context.Context, namespace, name string) (*v1.Pod, error)
	// PatchPodStatus sends patch, a strategic-merge patch of pods/status
	// carrying metadata.uid = uid, and returns the pod updated.
	PatchPodStatus(ctx context.Context, namespace, name string, uid types.UID, patch []byte) (*v1.Pod, error)
	// DeletePod deletes the pod with grace period 0, if its UID is uid.
	DeletePod(ctx context.Context, namespace, name string, uid types.UID) error
}

// APIWriterConfig configures an APIWriter; zero fields take the kubelet's
// defaults.
type APIWriterConfig struct {
	API PodAPI
	// Statuses are the statuses to write. A Manager feeds one APIWriter.
	Statuses *Manager
	// MirrorPodFor says whether pod is a static pod (from a file or URL
	// source) and gives its mirror pod in the API server, to which the
	// static pod's status is written; nil mirror: none yet, the status
	// waits. Mirror pods are never deleted by the APIWriter. Nil MirrorPodFor:
	// every pod is an API pod.
	MirrorPodFor func(pod *v1.Pod) (mirror *v1.Pod, static bool)
	Clock        clock.WithTicker
	SyncPeriod   time.Duration
	// BackOff is the first wait after a failed write; it doubles up to
	// MaxBackOff.
	BackOff    time.Duration
	MaxBackOff time.Duration
	// Jitter stretches each back-off; default: by up to half
	// (DefaultSyncJitterFactor). Tests pass func(d) d.
	Jitter func(time.Duration) time.Duration
	// Writers is how many pods' writes run at once, each pod's in
	// order (default DefaultWriters; 1: one after another, as the kubelet).
	// Run keeps one in four of them for urgent writes (see Run).
	Writers int
	// StatusWritten, if set, gets the API server's answer to each status
	// written (podstartup's Tracker.RecordStatusUpdated). It must not block.
	StatusWritten func(pod *v1.Pod)
	// StatusSynced, if set, gets for each status brought up to date in
	// the API server (patched, or found already there) how long before
	// the first change not yet written was published: the kubelet's
	// kubelet_pod_status_sync_duration_seconds (podsync's
	// Metrics.ObserveStatusSync). It must not block.
	StatusSynced func(took time.Duration)
	Log          logr.Logger
}

// APIWriter writes the statuses of a Manager to the API server, as the
// kubelet's status manager does: at once when the Manager publishes a
// change, and over every pod each SyncPeriod (10s). A status is written only
// if it changed since the pod's last write or, on that periodic pass, if the
// API pod lost it (overwritten, restored from a backup: the kubelet's
// needsReconcile) unless it is terminal and being deleted; the pass reads
// the copy the pod's source last delivered (the pod given to SetPodStatus or
// ReplacePod, or the mirror pod), normalized and merged as below, not the
// API. Only what differs from the API pod's status is sent: a
// strategic-merge patch of pods/status (StatusPatch, the kubelet's
// statusutil.PatchPodStatus) with the pod's UID as a precondition, so that
// it never lands on a pod recreated with the same name. A failed write is
// retried after a jittered back-off while the other pods go on; after an
// outage each pod gets its newest status once.
//
// Deliberate deviations from the kubelet, for churn (#34): writes to
// different pods run in parallel (APIWriterConfig.Writers), each pod's in
// order; Run starts a write as soon as a writer is free rather than batch
// after batch, taking statuses that tell of a started container or a
// ready pod first, with a writer in four kept for them (at 20 pods/s of
// churn the client's rate limit holds every write back, and a start must
// not also wait for a writer); and a write does not GET the pod first. The API pod's status it
// merges with and diffs against is the source's copy, or the API server's
// answer to the writer's own last patch while the source has not delivered
// that resourceVersion yet; only after a failed write is the pod read
// first, and a Conflict (the UID precondition) is told apart from a
// recreated pod by a read. A change another writer made that the source
// has not delivered yet is kept by the patch unless the writer changes the
// same field (a terminal phase set by the pod GC, say, in the last
// milliseconds), a window the kubelet's GET-then-patch also has.
//
// The merge keeps the API's StartTime, conditions of other writers,
// transition times of unchanged conditions and terminal phase. A static
// pod's status goes to its mirror pod (APIWriterConfig.MirrorPodFor). A pod
// whose deletion was asked (the pod given to SetPodStatus has a
// DeletionTimestamp) and whose published phase is terminal is made terminal
// in the API, then deleted with grace period 0 and its UID as a
// precondition: so publish a terminated pod's last status, terminal, once
// its termination is done, and RemovePod once its API pod is gone. A pod not in the API, or recreated, is written
// no more; a pod removed from the Manager is forgotten.
type APIWriter struct {
	cfg     APIWriterConfig
	running atomic.Bool

	mu         sync.Mutex // the records, while a round is planned or a write finished
	records    map[types.UID]*record
	batch      uint64
	buf        []versioned
	lastFull   time.Time // when the last full batch (drift repair) ran
	reconciles uint64    // statuses found overwritten in the API

	afterBatch func(tried int, retry time.Time) // tests: Run waits from here when idle
	afterPlan  func(queued int)                 // tests: Run planned a round
}

// record is what an APIWriter knows of a pod's API status.
type record struct {
	target   types.UID     // the API pod: the pod's own, or its mirror
	version  uint64        // of the status last written
	written  *v1.PodStatus // the status last written (the Manager's)
	done     bool          // target gone or deleted: nothing more to do
	failures int           // in a row
	retryAt  time.Time
	seen     uint64 // the last round that found the pod in the Manager
	busy     *write // queued or being written: no other write is planned
	// The API server's answer to the last write, until the source
	// delivers that version (resourceVersion answerRV) or a newer one.
	answer        *v1.PodStatus
	answerRV      uint64
	answerDeleted *metav1.Time // the answer's deletionTimestamp
	reread        bool         // a write failed: read the API pod before the next
	// The API pod's copy last compared with written, or current at the
	// write: weak, so that a replaced copy is not kept alive.
	checked weak.Pointer[v1.Pod]
}

// apiPod is where a pod's status goes.
type apiPod struct {
	namespace, name string
	uid             types.UID
	static          bool    // written to a mirror pod
	obj             *v1.Pod // the API pod as its source last delivered it
}

// NewAPIWriter returns an APIWriter with the kubelet's defaults filled in.
func NewAPIWriter(cfg APIWriterConfig) (*APIWriter, error) {
	if cfg.API == nil {
		return nil, errors.New("podstatus: APIWriterConfig.API is required")
	}
	if cfg.Statuses == nil {
		return nil, errors.New("podstatus: APIWriterConfig.Statuses is required")
	}
	for name, d := range map[string]time.Duration{"SyncPeriod": cfg.SyncPeriod, "BackOff": cfg.BackOff,
		"MaxBackOff": cfg.MaxBackOff} {
		if d < 0 {
			return nil, fmt.Errorf("podstatus: APIWriterConfig.%s: invalid value %s: must not be negative", name, d)
		}
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.SyncPeriod == 0 {
		cfg.SyncPeriod = DefaultSyncPeriod
	}
	if cfg.BackOff == 0 {
		cfg.BackOff = DefaultSyncBackOff
	}
	if cfg.MaxBackOff == 0 {
		cfg.MaxBackOff = max(cfg.SyncPeriod, cfg.BackOff)
	}
	if cfg.MaxBackOff < cfg.BackOff {
		return nil, fmt.Errorf("podstatus: APIWriterConfig.MaxBackOff: invalid value %s: must not be less than BackOff (%s)",
			cfg.MaxBackOff, cfg.BackOff)
	}
	if cfg.Jitter == nil {
		cfg.Jitter = func(d time.Duration) time.Duration { return wait.Jitter(d, DefaultSyncJitterFactor) }
	}
	switch {
	case cfg.Writers < 0:
		return nil, fmt.Errorf("podstatus: APIWriterConfig.Writers: invalid value %d: must not be negative", cfg.Writers)
	case cfg.Writers == 0:
		cfg.Writers = DefaultWriters
	}
	return &APIWriter{cfg: cfg, records: map[types.UID]*record{}}, nil
}

// Run writes statuses until ctx ends, then returns nil: at once, each time
// the Manager publishes a change, when a failed write's back-off ends, and
// every SyncPeriod, a full pass that also repairs drift (see Sync). Unlike
// Sync's batches, Run does not wait for one round's writes before the
// next: a pod published while others are written is written as soon as
// one of the Writers is free, and a write that tells of a container that
// started or a pod that became ready goes before the others (see urgent)
// and has a writer in four kept for it: routine writes use the others.
// A second Run while one runs returns an error; Sync must not be called
// meanwhile.
func (s *APIWriter) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return errors.New("podstatus: APIWriter.Run is already running")
	}
	defer s.running.Store(false)
	ticker := s.cfg.Clock.NewTicker(s.cfg.SyncPeriod)
	defer ticker.Stop()
	retry := s.cfg.Clock.NewTimer(s.cfg.MaxBackOff)
	defer retry.Stop()
	results := make(chan *write)
	var queue writeQueue
	busy, written := 0, 0 // writes with a writer; writes finished since the last afterBatch
	routine := 0          // of busy, the writes not urgent
	maxRoutine := s.cfg.Writers - s.cfg.Writers/4
	replan, full := true, true
	var next time.Time
	for {
		if replan {
			next = s.enqueue(ctx, full, &queue)
			replan, full = false, false
			retry.Stop()
			if !next.IsZero() {
				retry.Reset(max(next.Sub(s.cfg.Clock.Now()), 0))
			}
			if s.afterPlan != nil {
				s.afterPlan(queue.Len())
			}
			if busy == 0 && queue.Len() == 0 && s.afterBatch != nil {
				s.afterBatch(written, next)
				written = 0
			}
		}
		// A goroutine per write, up to Writers: none idles between writes
		// (hollow nodes run many writers in one process). A writer in four
		// is kept for urgent writes: under the client's rate limit every
		// write waits for its turn, and a start must not wait for a writer
		// too.
		for busy < s.cfg.Writers && queue.Len() > 0 && (queue.ws[0].urgent || routine < maxRoutine) {
			w := heap.Pop(&queue).(*write)
			busy++
			if !w.urgent {
				routine++
			}
			go func() {
				w.err = s.syncPod(ctx, s.refresh(w))
				results <- w
			}()
		}
		select {
		case <-ctx.Done():
			s.abandon(queue.ws)
			for ; busy > 0; busy-- {
				s.abandon([]*write{<-results})
			}
			return nil
		case w := <-results:
			busy--
			if !w.urgent {
				routine--
			}
			written++
			s.finish(w)
			replan = true
		case <-s.cfg.Statuses.changed:
			replan = true
		case <-retry.C():
			replan = true
		case <-ticker.C():
			replan, full = true, true
		}
	}
}

// Sync does one batch, as the kubelet's syncBatch: for each pod whose
// status changed since it was last written, or that can be deleted, it
// patches its status if that differs from the API's, and deletes it if it
// can be, Writers pods at once; pods whose last write failed wait for
// their back-off, and pods gone from the Manager are forgotten. A batch SyncPeriod or more
// after the last full one is full (syncBatch(all)): a pod whose status is
// unchanged since its last write is written again if its API pod, as the
// source delivered it, lost that status (drift). It returns the number of
// pods that were due, once their writes are done. For a caller with its
// own loop instead of Run.
func (s *APIWriter) Sync(ctx context.Context) int {
	var queue writeQueue
	s.enqueue(ctx, false, &queue)
	due := make([]*write, 0, queue.Len())
	for queue.Len() > 0 {
		due = append(due, heap.Pop(&queue).(*write))
	}
	n := min(s.cfg.Writers, len(due))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(due); i = int(next.Add(1) - 1) {
				due[i].err = s.syncPod(ctx, s.refresh(due[i]))
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		s.abandon(due)
		return len(due)
	}
	for _, w := range due {
		s.finish(w)
	}
	return len(due)
}

// enqueue plans a round: it pushes onto queue the writes due (a pod
// already queued or being written is left to that write, which refresh
// brings up to date; a queued one becomes urgent if its new status is),
// forgets pods gone from the Manager, and returns the earliest end of a
// back-off (zero: none). full forces a full round.
func (s *APIWriter) enqueue(ctx context.Context, full bool, queue *writeQueue) (retry time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batch++
	if now := s.cfg.Clock.Now(); full || !now.Before(s.lastFull.Add(s.cfg.SyncPeriod)) {
		full, s.lastFull = true, now
	}
	s.buf = s.cfg.Statuses.published(s.buf[:0])
	defer clear(s.buf) // no pod kept alive until the next round
	for _, p := range s.buf {
		if ctx.Err() != nil {
			return time.Time{} // nothing forgotten: not every pod was seen
		}
		if r := s.records[p.pod.UID]; r != nil && r.busy != nil {
			r.seen = s.batch
			if q := r.busy; q.index >= 0 && !q.urgent && urgent(p.status, r.written) {
				q.urgent = true
				heap.Fix(queue, q.index)
			}
			continue
		}
		w, ok := s.plan(p, full)
		switch {
		case !ok:
		case s.cfg.Clock.Now().Before(w.r.retryAt):
			retry = earliest(retry, w.r.retryAt)
		default:
			w.urgent = urgent(w.p.status, w.r.written)
			w.r.busy = &w
			heap.Push(queue, &w)
		}
	}
	for uid, r := range s.records {
		if r.seen != s.batch {
			delete(s.records, uid)
		}
	}
	return retry
}

// finish records how w's write went: a failure's back-off, or none.
func (s *APIWriter) finish(w *write) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.r.busy = nil
	if w.err == nil {
		w.r.failures, w.r.retryAt = 0, time.Time{}
		return
	}
	w.r.failures++
	d := s.backOff(w.r.failures)
	w.r.retryAt = s.cfg.Clock.Now().Add(d)
	log := s.cfg.Log.V(1)
	if w.r.failures == 1 {
		log = s.cfg.Log
	}
	log.Info("Cannot write pod status, retrying after a back-off", "pod", klogRef(w.p.pod),
		"failures", w.r.failures, "backOff", d, "error", w.err.Error())
}

// abandon frees the pods of writes cut short by the end of ctx, as if
// they had not been tried.
func (s *APIWriter) abandon(ws []*write) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range ws {
		w.r.busy = nil
	}
}

// write is one pod's write in a round.
type write struct {
	p        versioned
	t        apiPod
	r        *record
	deleting bool
	urgent   bool   // see urgent
	seq      uint64 // order planned
	index    int    // in its writeQueue; -1 once out of it
	err      error
}

// plan updates p's record for this batch and says whether p has something
// to write (a new status, drift on a full batch, a deletion to finish).
func (s *APIWriter) plan(p versioned, full bool) (write, bool) {
	r := s.records[p.pod.UID]
	if r == nil {
		r = &record{}
		s.records[p.pod.UID] = r
	}
	r.seen = s.batch
	t, ok := s.target(p.pod)
	if !ok {
		return write{}, false // a static pod without its mirror pod yet
	}
	if r.target != t.uid {
		*r = record{target: t.uid, seen: s.batch}
	}
	if r.version == p.version && r.written != nil {
		// The same status, perhaps now the one held in the pod
		// (Manager.ReplacePod): the older copy need not be kept.
		r.written = p.status
	}
	if r.answer != nil && delivered(t.obj, r.answerRV) {
		r.answer, r.answerDeleted = nil, nil
	}
	deleting := !t.static && deletable(p.pod, p.status)
	if full && !deleting && !r.done && s.drifted(p, t, r) {
		r.version, r.written = 0, nil // written as a change is, retried until it is
	}
	if r.done || (r.version >= p.version && !deleting) {
		return write{}, false
	}
	return write{p: p, t: t, r: r, deleting: deleting}, true
}

// refresh takes the pod's status as published now if it changed since the
// batch began: under a burst a batch's writes wait seconds on the client's
// rate limit, and a status superseded meanwhile need not be written (the
// kubelet's syncBatch writes the one it began with, then the newer one).
func (s *APIWriter) refresh(w *write) *write {
	p, ok := s.cfg.Statuses.newer(w.p.pod.UID, w.p.version)
	if !ok {
		return w
	}
	if t, ok := s.target(p.pod); ok && t.uid == w.t.uid {
		w.p, w.t = p, t
		w.deleting = !t.static && deletable(p.pod, p.status)
	}
	return w
}

// writeQueue orders the writes of Run: urgent ones first, then in the
// order they were planned (a container/heap.Interface).
type writeQueue struct {
	ws  []*write
	seq uint64
}

func (q *writeQueue) Len() int { return len(q.ws) }
func (q *writeQueue) Less(i, j int) bool {
	if q.ws[i].urgent != q.ws[j].urgent {
		return q.ws[i].urgent
	}
	return q.ws[i].seq < q.ws[j].seq
}
func (q *writeQueue) Swap(i, j int) {
	q.ws[i], q.ws[j] = q.ws[j], q.ws[i]
	q.ws[i].index, q.ws[j].index = i, j
}
func (q *writeQueue) Push(x any) {
	w := x.(*write)
	w.index, w.seq = len(q.ws), q.seq
	q.seq++
	q.ws = append(q.ws, w)
}
func (q *writeQueue) Pop() any {
	w := q.ws[len(q.ws)-1]
	q.ws[len(q.ws)-1] = nil
	q.ws = q.ws[:len(q.ws)-1]
	w.index = -1
	return w
}

// urgent says whether a status tells of more running containers, or of
// readiness, than the one last written: what users and controllers wait
// for (the startup SLO ends when a watch sees the pod running). Under
// churn the client's rate limit holds writes back, and these go first.
func urgent(status, written *v1.PodStatus) bool {
	return running(status) > running(written) || (podReady(status) && !podReady(written))
}

func running(st *v1.PodStatus) int {
	if st == nil {
		return 0
	}
	n := 0
	for _, cs := range [][]v1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for _, c := range cs {
			if c.State.Running != nil {
				n++
			}
		}
	}
	return n
}

func podReady(st *v1.PodStatus) bool {
	if st == nil {
		return false
	}
	c := find(st.Conditions, v1.PodReady)
	return c != nil && c.Status == v1.ConditionTrue
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

// target is where pod's status goes: the pod itself, or its mirror pod.
func (s *APIWriter) target(pod *v1.Pod) (apiPod, bool) {
	if s.cfg.MirrorPodFor != nil {
		if mirror, static := s.cfg.MirrorPodFor(pod); static {
			if mirror == nil {
				return apiPod{}, false
			}
			return apiPod{namespace: mirror.Namespace, name: mirror.Name, uid: mirror.UID, static: true, obj: mirror}, true
		}
	}
	return apiPod{namespace: pod.Namespace, name: pod.Name, uid: pod.UID, obj: pod}, true
}

// syncPod is the kubelet's syncPod without its read: merge with the API
// status as last known (base), patch if changed, delete if it can be. A
// pod not found, or found with another UID (recreated), is done: nothing
// more is written to it.
func (s *APIWriter) syncPod(ctx context.Context, w *write) error {
	p, t, r := w.p, w.t, w.r
	status := p.status
	if !w.deleting && r.written != nil && apiequality.Semantic.DeepEqual(*r.written, *status) {
		r.version, r.written = p.version, status // changed back to what was written
		s.synced(p)
		return nil
	}
	name := t.namespace + "/" + t.name
	api, deletedAt, err := s.base(ctx, t, r)
	if err != nil || api == nil {
		return err
	}
	merged := mergeStatus(p.pod, api, status, metav1.NewTime(s.cfg.Clock.Now()))
	patch, unchanged, err := StatusPatch(t.uid, *api, merged)
	if err != nil {
		return err
	}
	phase := merged.Phase
	if !unchanged {
		updated, err := s.cfg.API.PatchPodStatus(ctx, t.namespace, t.name, t.uid, patch)
		if err != nil {
			return s.patchFailed(ctx, t, r, err)
		}
		phase, deletedAt = updated.Status.Phase, updated.DeletionTimestamp
		r.answer, r.answerRV, r.answerDeleted = answerOf(updated)
		if s.cfg.StatusWritten != nil {
			s.cfg.StatusWritten(updated)
		}
		s.cfg.Log.V(3).Info("Pod status written", "pod", name, "uid", t.uid, "version", p.version, "patch", string(patch))
	}
	// The source's copy predates this write: no sign of drift.
	r.version, r.written, r.checked, r.reread = p.version, status, weak.Make(t.obj), false
	s.synced(p)
	if !w.deleting {
		return nil
	}
	if deletedAt == nil || !terminal(phase) {
		return fmt.Errorf("pod %s: cannot delete it yet: phase %q, deletionTimestamp %v", name, phase, deletedAt)
	}
	if err := s.cfg.API.DeletePod(ctx, t.namespace, t.name, t.uid); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting pod %s: %w", name, err)
	}
	s.cfg.Log.V(2).Info("Pod terminated and deleted from the API server", "pod", name, "uid", t.uid)
	r.done = true
	return nil
}

// synced tells the Manager that p's status is in the API server.
func (s *APIWriter) synced(p versioned) {
	if took, ok := s.cfg.Statuses.written(p.pod.UID, p.version); ok && s.cfg.StatusSynced != nil {
		s.cfg.StatusSynced(took)
	}
}

// base is the API pod's status and deletion time as the writer knows them
// without a read: the source's copy, or the API server's answer to the
// last write while the source has not delivered it. After a failed write
// it reads the API pod instead. Nil status: the pod is gone (r is done).
func (s *APIWriter) base(ctx context.Context, t apiPod, r *record) (*v1.PodStatus, *metav1.Time, error) {
	if !r.reread {
		if r.answer != nil {
			return r.answer, r.answerDeleted, nil
		}
		return &t.obj.Status, t.obj.DeletionTimestamp, nil
	}
	name := t.namespace + "/" + t.name
	pod, err := s.cfg.API.GetPod(ctx, t.namespace, t.name)
	switch {
	case apierrors.IsNotFound(err):
		s.gone(r, name, "not found")
		return nil, nil, nil
	case err != nil:
		return nil, nil, fmt.Errorf("reading pod %s: %w", name, err)
	case pod.UID != t.uid:
		s.gone(r, name, "recreated with UID "+string(pod.UID))
		return nil, nil, nil
	}
	r.answer, r.answerRV, r.answerDeleted = answerOf(pod)
	return r.answer, pod.DeletionTimestamp, nil
}

// patchFailed handles a failed patch: the pod is gone, or it was
// recreated (the UID precondition's Conflict, told apart by a read), or
// the next write reads the API pod first.
func (s *APIWriter) patchFailed(ctx context.Context, t apiPod, r *record, err error) error {
	name := t.namespace + "/" + t.name
	r.reread = true
	switch {
	case apierrors.IsNotFound(err):
		s.gone(r, name, "not found")
		return nil
	case apierrors.IsConflict(err):
		if _, _, rerr := s.base(ctx, t, r); rerr != nil || r.done {
			return rerr
		}
	}
	return fmt.Errorf("patching the status of pod %s: %w", name, err)
}

// answerOf keeps the status of an API server's answer, not the whole pod.
func answerOf(pod *v1.Pod) (*v1.PodStatus, uint64, *metav1.Time) {
	status := pod.Status
	return &status, resourceVersion(pod), pod.DeletionTimestamp
}

// resourceVersion is pod's resourceVersion as a number; 0 if it is not
// one (API servers over etcd give numbers, which the writer compares).
func resourceVersion(pod *v1.Pod) uint64 {
	v, _ := strconv.ParseUint(pod.ResourceVersion, 10, 64)
	return v
}

// delivered says whether the source's copy is the API pod at resource
// version rv or later.
func delivered(obj *v1.Pod, rv uint64) bool {
	v := resourceVersion(obj)
	return v != 0 && v >= rv
}

// gone marks the pod done: its API pod is no more.
func (s *APIWriter) gone(r *record, name, why string) {
	s.cfg.Log.V(2).Info("Pod is no longer in the API server, its status is not written", "pod", name, "uid", r.target, "why", why)
	r.done = true
}

// backOff is the wait after failures failed writes in a row, jittered.
func (s *APIWriter) backOff(failures int) time.Duration {
	d := s.cfg.BackOff
	for i := 1; i < failures && d < s.cfg.MaxBackOff; i++ {
		d *= 2
	}
	return s.cfg.Jitter(min(d, s.cfg.MaxBackOff))
}

// deletable is the kubelet's canBeDeleted, on the node's side: deletion was
// asked and the node published a terminal phase, which a pod being
// deleted gets once its termination is done (containers and sandbox
// stopped, volumes and cgroup gone). A status that only shows no container
// running is not enough: one may be starting.
func deletable(pod *v1.Pod, status *v1.PodStatus) bool {
	return pod.DeletionTimestamp != nil && terminal(status.Phase)
}

func klogRef(p *v1.Pod) string { return p.Namespace + "/" + p.Name }
