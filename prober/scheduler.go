package prober

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// scheduler runs every worker at its period from one goroutine with one
// timer (a min-heap of due times) and a fixed pool of probe goroutines, in
// place of the kubelet's goroutine and ticker per probe. The pool bounds how
// many probes are in flight, so hanging targets cannot exhaust descriptors:
// they only delay other probes once the pool is full.
type scheduler struct {
	clock clock.WithTicker
	pool  int

	mu    sync.Mutex
	queue workerHeap
	wake  chan struct{}
}

func newScheduler(clk clock.WithTicker, pool int) *scheduler {
	return &scheduler{clock: clk, pool: pool, wake: make(chan struct{}, 1)}
}

// add queues w at due.
func (s *scheduler) add(w *worker, due time.Time) {
	s.mu.Lock()
	w.due = due
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
		w.due = s.clock.Now()
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

// run dispatches due workers to the pool until ctx ends. exec runs one
// worker period and says whether to keep the worker; done is called for a
// worker that stopped or was removed while running.
func (s *scheduler) run(ctx context.Context, exec func(*worker) bool, done func(*worker)) {
	work := make(chan *worker)
	var wg sync.WaitGroup
	for i := 0; i < s.pool; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range work {
				keep := exec(w)
				s.finish(w, keep, done)
			}
		}()
	}
	defer func() {
		close(work)
		wg.Wait()
	}()
	timer := s.clock.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		w, wait := s.next()
		if w != nil {
			select {
			case work <- w:
				continue
			case <-ctx.Done():
				s.requeue(w)
				return
			}
		}
		var fire <-chan time.Time
		if wait > 0 {
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

// next pops a due worker, or says how long until the earliest is due
// (0: the queue is empty, wait for a poke).
func (s *scheduler) next() (*worker, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return nil, 0
	}
	w := s.queue[0]
	if d := w.due.Sub(s.clock.Now()); d > 0 {
		return nil, d
	}
	heap.Pop(&s.queue)
	w.running = true
	return w, 0
}

func (s *scheduler) requeue(w *worker) {
	s.mu.Lock()
	w.running = false
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
func (h workerHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
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
