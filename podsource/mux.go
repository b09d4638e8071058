package podsource

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// NotificationMode says what the mux emits (the kubelet's
// PodConfigNotificationMode).
type NotificationMode int

const (
	// ModeIncremental (the kubelet's PodConfigNotificationIncremental, its
	// only mode in use) emits REMOVE, ADD, UPDATE, DELETE and RECONCILE per
	// source, each only when non-empty, in that order.
	ModeIncremental NotificationMode = iota
	// ModeSnapshot emits, after any change, one SET with every pod of every
	// source.
	ModeSnapshot
)

// MuxConfig configures a Mux. The zero value is usable.
type MuxConfig struct {
	Mode NotificationMode
	// Buffer is the capacity of the Updates channel (kubelet: 50).
	Buffer int
	// Clock stamps kubernetes.io/config.seen. Default: the real clock.
	Clock   clock.PassiveClock
	Log     logr.Logger
	Metrics *Metrics
	// Observer, if set, is told of each API pod (config.source "api") a
	// source adds or changes, with when the mux got it, and of each pod
	// gone: podstartup's *Tracker, as the kubelet's config tells its pod
	// startup latency tracker.
	Observer Observer
}

// Observer follows the API pods through the mux.
type Observer interface {
	ObservedPodOnWatch(pod *v1.Pod, when time.Time)
	DeletePodStartupState(uid types.UID)
}

// Ref names one source's pod.
type Ref struct {
	Source string
	UID    types.UID
}

// Conflict is a pod that was not passed on because another pod, from the
// same or an earlier source, already had its namespace/name.
type Conflict struct {
	FullName string
	Kept     Ref
	Rejected Ref
}

func (c Conflict) String() string {
	return fmt.Sprintf("pod %s from source %q (uid %s) conflicts with the one from source %q (uid %s), which is kept",
		c.FullName, c.Rejected.Source, c.Rejected.UID, c.Kept.Source, c.Kept.UID)
}

// Mux merges the pods of its sources into one stream of PodUpdates, with
// the kubelet's podStorage semantics (pkg/kubelet/config/config.go). A
// source sends its full set (SET) or deltas (ADD, UPDATE, DELETE, REMOVE);
// the mux keeps each source's pods by UID and emits, per source and in this
// order, REMOVE, ADD, UPDATE, DELETE and RECONCILE, each only if something
// changed semantically (the kubelet's podsDifferSemantically): an unchanged
// re-read emits nothing, a change only in status is a RECONCILE, a change
// in spec, labels, generation, deletion timestamp or annotations (except the
// local config.seen, config.source, config.mirror) an UPDATE (DELETE if a
// deletion timestamp is set), a pod gone a REMOVE. ModeSnapshot emits one
// SET of everything instead.
//
// The first sight of a pod stamps config.seen (RFC3339Nano, from the
// injected clock) on the mux's shallow copy, unless its source stamped it
// (the API server source does, on its own objects); such a pod's RECONCILE
// is the source's newer object, which consumers may hold instead of the
// older one (the kubelet's pod manager does). Emitted pods are shared, never
// copied per consumer: consumers must not modify them, nor may sources
// modify pods they sent (they may send the same pointer again: the mux then
// skips the pod without comparing). SourcesReady and AllSourcesReady say
// whether the sources have delivered a first SET; pod GC must wait for it.
// A source's first SET with nothing to add emits an empty ADD, the
// kubelet's readiness signal.
//
// The same namespace/name from two pods of two sources is not merged (a
// deviation from the kubelet): the first pod seen keeps it, the other is
// held back, logged, counted in podsource_conflicts_total and listed by
// Conflicts. When the kept pod goes away, the first held-back pod (in
// source registration order) is added in its latest version.
//
// It is passive: sources call Update, which merges and sends what changed
// on Updates before returning (so the stream's order is the merge order,
// and a slow consumer slows the sources).
//
// Locking: sendMu orders whole updates (merge, then send); mu guards the
// merged state and is never held across a send, so the consumer may call
// any method between reads while sources wait on a full channel (the
// kubelet's podStorage has the same split: updateLock and podLock).
type Mux struct {
	cfg     MuxConfig
	log     logr.Logger
	clock   clock.PassiveClock
	updates chan PodUpdate

	sendMu   sync.Mutex
	mu       sync.Mutex
	order    []string
	sources  map[string]*sourceState
	owners   map[string]Ref // full name -> the pod that has it
	shadowed map[string]int // full name -> number of rejected pods with it
}

type sourceState struct {
	pods   map[types.UID]*entry
	seen   bool // sent what its first SET changed on Updates
	active int  // pods not held back
}

type entry struct {
	// pod is what the mux passed on last as ADD or UPDATE (withSeen): the
	// source's pod when it stamped config.seen itself (then also as
	// RECONCILE), else a shallow copy with annotations of its own. A
	// held-back pod is the source's own, until it passes.
	pod      *v1.Pod
	from     *v1.Pod // the source's pointer, to skip unchanged pods fast
	shadowed bool
}

// NewMux returns a Mux; register its sources before they send.
func NewMux(cfg MuxConfig) *Mux {
	if cfg.Buffer <= 0 {
		cfg.Buffer = 50
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Mux{cfg: cfg, log: cfg.Log, clock: cfg.Clock, updates: make(chan PodUpdate, cfg.Buffer),
		sources: map[string]*sourceState{}, owners: map[string]Ref{}, shadowed: map[string]int{}}
}

// Register declares sources; AllSourcesReady waits for each of them. The
// order of registration is the order of precedence when a pod that kept
// its name goes away and several rejected pods could take its place.
func (m *Mux) Register(sources ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range sources {
		if _, ok := m.sources[s]; !ok {
			m.order = append(m.order, s)
			m.sources[s] = &sourceState{pods: map[types.UID]*entry{}}
		}
	}
}

// Updates is the merged stream. Its pods are shared, not copies: the
// mux's, over the source's objects (one copy of a pod per node, not three,
// as the kubelet's podStorage shares them). A consumer must not modify one;
// it copies what it would change.
func (m *Mux) Updates() <-chan PodUpdate { return m.updates }

// SourcesReady reports whether each of the named sources has delivered its
// full set (a SET) at least once: merged it and put what it changed on
// Updates. The kubelet's pod garbage collection must wait for it: before, a
// pod missing from the stream may only be unread. A consumer that sees
// true and then drains Updates holds every pod of those sets.
func (m *Mux) SourcesReady(sources ...string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range sources {
		st, ok := m.sources[s]
		if !ok || !st.seen {
			return false
		}
	}
	return true
}

// AllSourcesReady is SourcesReady for every registered source.
func (m *Mux) AllSourcesReady() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, st := range m.sources {
		if !st.seen {
			return false
		}
	}
	return true
}

// Conflicts lists the pods currently held back because their full name was
// taken, sorted by name.
func (m *Mux) Conflicts() []Conflict {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Conflict
	for _, src := range m.order {
		for uid, e := range m.sources[src].pods {
			if e.shadowed {
				name := ownerName(e.pod)
				out = append(out, Conflict{FullName: name, Kept: m.owners[name], Rejected: Ref{src, uid}})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].FullName != out[j].FullName {
			return out[i].FullName < out[j].FullName
		}
		return out[i].Rejected.Source < out[j].Rejected.Source
	})
	return out
}

// Pods returns copies of every pod in the stream (not the held-back ones).
func (m *Mux) Pods() []*v1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.allPods()
}

// UIDs returns the UIDs of every pod in the stream (not the held-back
// ones): Pods without the copies, for a caller that only asks which pods
// the sources have.
func (m *Mux) UIDs() map[types.UID]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[types.UID]bool{}
	for _, src := range m.order {
		for uid, e := range m.sources[src].pods {
			if !e.shadowed {
				out[uid] = true
			}
		}
	}
	return out
}

func (m *Mux) allPods() []*v1.Pod {
	var out []*v1.Pod
	for _, src := range m.order {
		for _, e := range m.sources[src].pods {
			if !e.shadowed {
				p := e.pod.DeepCopy()
				e.from.Status.DeepCopyInto(&p.Status) // the latest, which a RECONCILE does not keep in e.pod
				out = append(out, p)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return FullName(out[i]) < FullName(out[j]) })
	return out
}

// batch collects one merge's output, per source in emission order.
type batch struct {
	order []string
	ops   map[string]map[Op][]*v1.Pod
}

func (b *batch) add(src string, op Op, p *v1.Pod) {
	if b.ops == nil {
		b.ops = map[string]map[Op][]*v1.Pod{}
	}
	byOp, ok := b.ops[src]
	if !ok {
		byOp = map[Op][]*v1.Pod{}
		b.ops[src] = byOp
		b.order = append(b.order, src)
	}
	byOp[op] = append(byOp[op], p)
}

// Update merges one update of a source (SET: its full set; ADD, UPDATE,
// DELETE: pods added or changed; REMOVE: pods gone) and sends the changes.
// Sources must not modify pods after passing them. It returns an error for
// an unregistered source or unknown op, or ctx's error if ctx ended while
// the consumer was not reading (the merge is kept).
func (m *Mux) Update(ctx context.Context, u PodUpdate) error {
	m.sendMu.Lock()
	defer m.sendMu.Unlock()
	out, firstSet, err := m.merge(u)
	if err != nil {
		return err
	}
	for _, u := range out {
		select {
		case m.updates <- u:
			m.cfg.Metrics.update(u.Source, u.Op, len(u.Pods))
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if firstSet {
		m.mu.Lock()
		m.sources[u.Source].seen = true
		m.mu.Unlock()
	}
	return nil
}

// merge applies u to the state and returns what to send, and whether u is
// its source's first SET.
func (m *Mux) merge(u PodUpdate) ([]PodUpdate, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.sources[u.Source]
	if !ok {
		return nil, false, fmt.Errorf("podsource: update from unregistered source %q", u.Source)
	}
	var b batch
	var released []string
	switch u.Op {
	case SET:
		keep := make(map[types.UID]struct{}, len(u.Pods))
		for _, p := range u.Pods {
			keep[p.UID] = struct{}{}
		}
		for uid := range st.pods {
			if _, ok := keep[uid]; !ok {
				released = m.remove(u.Source, st, uid, &b, released)
			}
		}
		m.upsertAll(u.Source, st, u.Pods, &b, &released)
	case ADD, UPDATE, DELETE:
		m.upsertAll(u.Source, st, u.Pods, &b, &released)
	case REMOVE:
		for _, p := range u.Pods {
			released = m.remove(u.Source, st, p.UID, &b, released)
		}
	default:
		return nil, false, fmt.Errorf("podsource: source %q sent unsupported op %q", u.Source, u.Op)
	}
	// seen is set once the first SET's updates are sent: one cut short by
	// its ctx leaves it false, and the next SET says so again.
	firstSet := u.Op == SET && !st.seen
	m.promote(released, &b)
	return m.collect(u.Source, firstSet, &b), firstSet, nil
}

func (m *Mux) upsertAll(src string, st *sourceState, pods []*v1.Pod, b *batch, released *[]string) {
	seenUID := make(map[types.UID]struct{}, len(pods))
	for _, p := range pods {
		if _, dup := seenUID[p.UID]; dup {
			m.log.Error(nil, "Source sent the same pod UID twice; keeping the first", "source", src, "pod", FullName(p), "podUID", p.UID)
			continue
		}
		seenUID[p.UID] = struct{}{}
		m.upsert(src, st, p, b, released)
	}
}

func (m *Mux) remove(src string, st *sourceState, uid types.UID, b *batch, released []string) []string {
	e, ok := st.pods[uid]
	if !ok {
		return released
	}
	delete(st.pods, uid)
	if m.cfg.Observer != nil {
		m.cfg.Observer.DeletePodStartupState(uid)
	}
	name := ownerName(e.pod)
	if e.shadowed {
		m.unshadow(name)
		return released
	}
	delete(m.owners, name)
	st.active--
	b.add(src, REMOVE, e.pod)
	return append(released, name)
}

func (m *Mux) unshadow(name string) {
	if m.shadowed[name]--; m.shadowed[name] <= 0 {
		delete(m.shadowed, name)
	}
}

func (m *Mux) upsert(src string, st *sourceState, p *v1.Pod, b *batch, released *[]string) {
	e, ok := st.pods[p.UID]
	if ok && e.from == p {
		return // the very object the source sent before: unchanged
	}
	if m.cfg.Observer != nil && p.Annotations[ConfigSourceAnnotation] == SourceAPI {
		m.cfg.Observer.ObservedPodOnWatch(p, m.cfg.Clock.Now())
	}
	name := ownerName(p)
	if ok && ownerName(e.pod) != name { // renamed with an explicit UID
		*released = m.remove(src, st, p.UID, b, *released)
		ok = false
	}
	if !ok {
		if owner, taken := m.owners[name]; taken {
			st.pods[p.UID] = &entry{pod: p, from: p, shadowed: true}
			m.shadowed[name]++
			c := Conflict{FullName: name, Kept: owner, Rejected: Ref{src, p.UID}}
			m.log.Error(nil, "Pod conflict: same namespace/name from another pod; keeping the first", "conflict", c.String())
			m.cfg.Metrics.conflict(src)
			return
		}
		m.owners[name] = Ref{src, p.UID}
		np := m.withSeen(p, "")
		st.pods[p.UID] = &entry{pod: np, from: p}
		st.active++
		b.add(src, ADD, np)
		return
	}
	if e.shadowed {
		e.pod, e.from = p, p
		return
	}
	old, prev := e.pod, e.from
	e.from = p
	if !podsDifferSemantically(old, p) {
		// A status change only: passed on, not kept (the source's latest
		// status is e.from's), so that a pod whose API status moves on
		// costs no copy.
		if !equality.Semantic.DeepEqual(prev.Status, p.Status) {
			if stampedBySource(p) {
				// The source's own, stamped: the mux and its consumers move
				// to the new object, so the old one can go.
				e.pod = p
				b.add(src, RECONCILE, p)
				return
			}
			np := *old
			np.Status = p.Status
			b.add(src, RECONCILE, &np)
		}
		return
	}
	np := m.withSeen(p, old.Annotations[ConfigSeenAnnotation])
	e.pod = np
	if np.DeletionTimestamp != nil {
		b.add(src, DELETE, np)
	} else {
		b.add(src, UPDATE, np)
	}
}

// withSeen returns p with kubernetes.io/config.seen: p itself when its
// source stamped it (the API server source does, keeping the first sight
// across updates), else a shallow copy of p whose annotations are its own,
// with seen (now, if empty). The source's pod is never modified.
func (m *Mux) withSeen(p *v1.Pod, seen string) *v1.Pod {
	if stampedBySource(p) {
		return p
	}
	if seen == "" {
		seen = m.clock.Now().UTC().Format(time.RFC3339Nano)
	}
	np := *p
	np.Annotations = make(map[string]string, len(p.Annotations)+1)
	maps.Copy(np.Annotations, p.Annotations)
	np.Annotations[ConfigSeenAnnotation] = seen
	return &np
}

// stampedBySource says p's source set config.seen itself: the mux passes
// its object as it is.
func stampedBySource(p *v1.Pod) bool { return p.Annotations[ConfigSeenAnnotation] != "" }

// promote gives each released name still free to the first held-back pod
// with it, in source registration order.
func (m *Mux) promote(released []string, b *batch) {
	for _, name := range released {
		if m.shadowed[name] == 0 {
			continue
		}
		if _, taken := m.owners[name]; taken {
			continue
		}
	search:
		for _, src := range m.order {
			st := m.sources[src]
			for uid, e := range st.pods {
				if e.shadowed && ownerName(e.pod) == name {
					e.shadowed = false
					st.active++
					m.unshadow(name)
					m.owners[name] = Ref{src, uid}
					e.pod = m.withSeen(e.pod, "")
					b.add(src, ADD, e.pod)
					m.log.Info("Pod held back by a conflict now passes", "pod", name, "source", src, "podUID", uid)
					break search
				}
			}
		}
	}
}

// collect turns one merge's batch into the updates to send, in the
// stream's order. Caller holds mu.
func (m *Mux) collect(src string, firstSet bool, b *batch) []PodUpdate {
	var out []PodUpdate
	if m.cfg.Mode == ModeSnapshot {
		if len(b.order) > 0 || firstSet {
			out = append(out, PodUpdate{Op: SET, Pods: m.allPods(), Source: src})
		}
	} else {
		if firstSet && !slices.Contains(b.order, src) {
			b.order = append([]string{src}, b.order...)
		}
		for _, s := range b.order {
			ops := b.ops[s]
			for _, op := range []Op{REMOVE, ADD, UPDATE, DELETE} {
				if len(ops[op]) > 0 {
					out = append(out, PodUpdate{Op: op, Pods: ops[op], Source: s})
				}
			}
			// An empty ADD tells the consumer that a source delivered its
			// first set, as the kubelet does.
			if s == src && firstSet && len(ops[ADD])+len(ops[UPDATE])+len(ops[DELETE]) == 0 {
				out = append(out, PodUpdate{Op: ADD, Source: s})
			}
			if len(ops[RECONCILE]) > 0 {
				out = append(out, PodUpdate{Op: RECONCILE, Pods: ops[RECONCILE], Source: s})
			}
		}
	}
	for _, s := range b.order {
		m.cfg.Metrics.setPods(s, m.sources[s].active)
	}
	return out
}

// localAnnotations are the kubelet's own; a change in them alone is not an
// update.
var localAnnotations = []string{ConfigSourceAnnotation, ConfigMirrorAnnotation, ConfigSeenAnnotation}

func isLocal(k string) bool { return slices.Contains(localAnnotations, k) }

// podsDifferSemantically is the kubelet's: spec, labels, deletion
// timestamp and grace period, generation, annotations other than the local
// ones.
func podsDifferSemantically(existing, ref *v1.Pod) bool {
	if existing == ref {
		return false
	}
	if !equality.Semantic.DeepEqual(existing.Spec, ref.Spec) ||
		!equality.Semantic.DeepEqual(existing.Labels, ref.Labels) ||
		!equality.Semantic.DeepEqual(existing.DeletionTimestamp, ref.DeletionTimestamp) ||
		!equality.Semantic.DeepEqual(existing.DeletionGracePeriodSeconds, ref.DeletionGracePeriodSeconds) ||
		existing.Generation != ref.Generation {
		return true
	}
	n := 0
	for k, v := range existing.Annotations {
		if isLocal(k) {
			continue
		}
		n++
		if rv, ok := ref.Annotations[k]; !ok || rv != v {
			return true
		}
	}
	for k := range ref.Annotations {
		if !isLocal(k) {
			n--
		}
	}
	return n != 0
}

// ownerName is the name a pod holds in the mux: its full name, except that
// a mirror pod (the API's picture of a static pod, which the agent never
// runs) holds a name of its own and so never conflicts with its static pod.
func ownerName(p *v1.Pod) string {
	if _, mirror := p.Annotations[ConfigMirrorAnnotation]; mirror {
		return FullName(p) + " (mirror)"
	}
	return FullName(p)
}
