package prober

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// scheduler runs every worker at its period from one goroutine with one
// timer (a min-heap of due times), in place of the kubelet's goroutine and
// ticker per probe. A bound on probes in flight keeps hanging targets from
// exhausting descriptors: they only delay other probes once it is reached.
type scheduler struct {
	clock clock.WithTicker
	pool  int           // workers between start and finish at most
	slack time.Duration // workers due this soon start now

	mu       sync.Mutex
	queue    workerHeap
	inFlight int
	wake     chan struct{}
}

func newScheduler(clk clock.WithTicker, pool int) *scheduler {
	return &scheduler{clock: clk, pool: pool, wake: make(chan struct{}, 1)}
}

// add queues w at due.
func (s *scheduler) add(w *worker, due time.Time) {
	s.mu.Lock()
	w.due = due
	head := s.push(w)
	s.mu.Unlock()
	if head {
		s.poke()
	}
}

// push queues w at its due time (s.mu held), superseding any entry it
// had, and says whether it is now the earliest.
func (s *scheduler) push(w *worker) (head bool) {
	w.seq++
	w.queued = true
	s.queue.push(heapEntry{due: w.due.UnixNano(), seq: w.seq, w: w})
	e := s.queue[0]
	return e.w == w && e.seq == w.seq
}

// remove takes w out of the queue; a running w is dropped when it finishes.
func (s *scheduler) remove(w *worker) (running bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.removed = true
	w.queued = false // its entry is skipped when it surfaces
	return w.running
}

// trigger makes a queued w due now.
func (s *scheduler) trigger(w *worker) {
	s.mu.Lock()
	if w.queued && w.due.After(s.clock.Now()) {
		w.due = s.clock.Now()
		s.push(w)
	}
	s.mu.Unlock()
	s.poke()
}

func (s *scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run dispatches due workers until ctx ends: start begins a worker's
// period and must end it, at once or later, with finish. poll, called at
// every wake-up, drives probes in flight and says when it wants to be
// called again (0: not needed). Workers due within slack of now start now,
// so that probes due close together share one wake-up. At most pool
// workers are between start and finish at once.
func (s *scheduler) run(ctx context.Context, start func(*worker, time.Time), poll func(time.Time) time.Duration) {
	timer := s.clock.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := s.clock.Now()
		poll(now) // harvest first: finished probes free their slots
		var wait time.Duration
		for {
			w, until := s.next(now)
			if w == nil {
				wait = until
				break
			}
			start(w, now)
		}
		// Again, for the probes just started: when to read them.
		if p := poll(now); p > 0 && (wait == 0 || p < wait) {
			wait = p
		}
		var fire <-chan time.Time
		if wait > 0 {
			at := now.Add(wait)
			if s.slack > 0 {
				// Wake on the slack grid, so that dispatching and reading
				// probes in flight share wake-ups.
				if r := at.Sub(at.Truncate(s.slack)); r != 0 {
					at = at.Add(s.slack - r)
				}
			}
			if !s.arm(timer, at) {
				timer.Stop()
				continue // due already: the clock moved on while we dispatched
			}
			fire = timer.C()
		}
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-fire:
		}
		timer.Stop()
	}
}

// armSkew is how late arm lets a timer be.
const armSkew = time.Millisecond

// arm sets timer to fire at at, or says at is not in the future. A timer
// is set relative to the clock's time when it is set, so a clock that moved
// on between the reading and the setting (a test's fake clock stepped
// meanwhile, or a goroutine descheduled) would leave it late: the time is
// read again after, and the timer set again if it moved by armSkew or more.
func (s *scheduler) arm(timer clock.Timer, at time.Time) bool {
	for {
		now := s.clock.Now()
		if !at.After(now) {
			return false
		}
		timer.Reset(at.Sub(now))
		if s.clock.Since(now) < armSkew {
			return true
		}
	}
}

// next pops a worker due by now (plus slack), or says how long until the
// earliest is (0: none queued, or pool workers are running: wait for a
// poke).
func (s *scheduler) next(now time.Time) (*worker, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.queue) > 0 {
		if e := s.queue[0]; e.seq != e.w.seq || !e.w.queued {
			s.queue.pop() // superseded or removed
			continue
		}
		break
	}
	if len(s.queue) == 0 || s.inFlight >= s.pool {
		return nil, 0
	}
	w := s.queue[0].w
	if d := w.due.Sub(now); d > s.slack {
		return nil, d
	}
	s.queue.pop()
	w.queued = false
	w.running = true
	s.inFlight++
	return w, 0
}

func (s *scheduler) requeue(w *worker) {
	s.mu.Lock()
	w.running = false
	s.inFlight--
	if !w.removed {
		s.push(w)
	}
	s.mu.Unlock()
}

// finish puts w back at its next tick: the first one after now on its
// period's grid, so a slow probe skips ticks as a ticker would.
func (s *scheduler) finish(w *worker, keep bool, done func(*worker)) {
	s.mu.Lock()
	w.running = false
	full := s.inFlight == s.pool
	s.inFlight--
	if full {
		s.poke() // the dispatcher may be waiting for a free slot
	}
	if !keep || w.removed {
		w.removed = true
		s.mu.Unlock()
		done(w)
		return
	}
	now, period := s.clock.Now(), w.period()
	next := w.due.Add(period)
	if !next.After(now) {
		next = next.Add((now.Sub(next)/period + 1) * period)
	}
	w.due = next
	head := s.push(w)
	s.mu.Unlock()
	if head {
		s.poke() // only an earlier head needs the dispatcher to wake sooner
	}
}

// heapEntry is a worker queued at due. Entries hold the due time inline,
// so ordering 10,000 workers touches one array instead of every worker;
// an entry whose seq is not its worker's current one was superseded (by a
// trigger or a removal) and is dropped when it reaches the top.
type heapEntry struct {
	due int64 // Unix nanoseconds
	seq uint64
	w   *worker
}

// workerHeap is a binary min-heap of entries by due time, written out
// rather than through container/heap, whose interface would box every
// entry pushed or popped.
type workerHeap []heapEntry

func (h *workerHeap) push(e heapEntry) {
	*h = append(*h, e)
	q := *h
	for i := len(q) - 1; i > 0; {
		parent := (i - 1) / 2
		if q[parent].due <= q[i].due {
			break
		}
		q[parent], q[i] = q[i], q[parent]
		i = parent
	}
}

func (h *workerHeap) pop() {
	q := *h
	n := len(q) - 1
	q[0] = q[n]
	q[n] = heapEntry{}
	q = q[:n]
	for i := 0; ; {
		least, l, r := i, 2*i+1, 2*i+2
		if l < n && q[l].due < q[least].due {
			least = l
		}
		if r < n && q[r].due < q[least].due {
			least = r
		}
		if least == i {
			break
		}
		q[i], q[least] = q[least], q[i]
		i = least
	}
	*h = q
}
