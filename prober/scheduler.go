package prober

import (
	"container/heap"
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
	w.setDue(due)
	heap.Push(&s.queue, w)
	head := w.index == 0
	s.mu.Unlock()
	if head {
		s.poke()
	}
}

// remove takes w out of the queue; a running w is dropped when it finishes.
func (s *scheduler) remove(w *worker) (running bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.removed = true
	if w.index >= 0 {
		heap.Remove(&s.queue, w.index)
	}
	return w.running
}

// trigger makes a queued w due now.
func (s *scheduler) trigger(w *worker) {
	s.mu.Lock()
	if w.index >= 0 && w.due.After(s.clock.Now()) {
		w.setDue(s.clock.Now())
		heap.Fix(&s.queue, w.index)
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
			if s.slack > 0 {
				// Wake on the slack grid, so that dispatching and reading
				// probes in flight share wake-ups.
				at := now.Add(wait)
				if r := at.Sub(at.Truncate(s.slack)); r != 0 {
					wait += s.slack - r
				}
			}
			timer.Reset(wait)
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

// next pops a worker due by now (plus slack), or says how long until the
// earliest is (0: none queued, or pool workers are running: wait for a
// poke).
func (s *scheduler) next(now time.Time) (*worker, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 || s.inFlight >= s.pool {
		return nil, 0
	}
	w := s.queue[0]
	if d := w.due.Sub(now); d > s.slack {
		return nil, d
	}
	heap.Pop(&s.queue)
	w.running = true
	s.inFlight++
	return w, 0
}

func (s *scheduler) requeue(w *worker) {
	s.mu.Lock()
	w.running = false
	s.inFlight--
	if !w.removed {
		heap.Push(&s.queue, w)
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
	w.setDue(next)
	heap.Push(&s.queue, w)
	head := w.index == 0
	s.mu.Unlock()
	if head {
		s.poke() // only an earlier head needs the dispatcher to wake sooner
	}
}

// workerHeap orders workers by due time.
type workerHeap []*worker

func (h workerHeap) Len() int           { return len(h) }
func (h workerHeap) Less(i, j int) bool { return h[i].dueNanos < h[j].dueNanos }
func (h workerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *workerHeap) Push(x any) {
	w := x.(*worker)
	w.index = len(*h)
	*h = append(*h, w)
}
func (h *workerHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	w.index = -1
	*h = old[:len(old)-1]
	return w
}
