package prober

import (
	"context"
	"errors"
	"sync"
	"time"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/prober/probe"
)

// batchSlack: with the batch engine, probes due within 2ms of each other
// start on the same wake-up.
const batchSlack = 2 * time.Millisecond

// runState is what one Run shares with the probes it starts.
type runState struct {
	ctx   context.Context
	wg    sync.WaitGroup // probes on goroutines of their own
	batch *probe.Batch   // nil: every probe on its own goroutine
}

// Run probes until ctx ends, then closes the Updates channels of the
// three Results and returns nil. A prober runs once: a second Run returns
// an error.
//
// Each due worker's bookkeeping runs on the scheduler's goroutine. With the
// default Runner, plain-HTTP and TCP probes of IP addresses (nearly all
// probes) then run on the scheduler's goroutine too, through a
// probe.Batch: sockets are opened without blocking and answers collected
// on later wake-ups, so a thousand probes cost a few wake-ups rather than a
// goroutine, a netpoller registration and several sleeps and wake-ups each,
// which on loopback were most of a probe's CPU. Exec, gRPC, https probes
// and custom Runners run on a goroutine each.
func (m *Manager) Run(ctx context.Context) error {
	if !m.ran.CompareAndSwap(false, true) {
		return errors.New("prober: Run was already called")
	}
	// Once ctx ends the consumer reads no more: a result sent then must not
	// hold up the scheduler or a probe that Run waits for.
	stop := context.AfterFunc(ctx, func() {
		for _, r := range []*Results{m.liveness, m.readiness, m.startup} {
			r.abandon()
		}
	})
	defer stop()
	rs := &runState{ctx: ctx}
	h, _ := m.cfg.Runner.(*handlers)
	if h != nil {
		rs.batch = h.http.NewBatch()
		m.sched.mu.Lock()
		m.sched.slack = batchSlack
		m.sched.mu.Unlock()
	}
	m.run = rs
	start := func(w *worker, now time.Time) {
		status, id, probeNow, keep := w.prepare()
		switch {
		case !probeNow:
			m.sched.finish(w, keep, m.retire)
		case rs.batch != nil && m.startBatched(rs.batch, w, status, id, now):
		default:
			m.goProbe(rs, w, status, id)
		}
	}
	poll := func(now time.Time) time.Duration {
		if rs.batch == nil || rs.batch.Len() == 0 {
			return 0
		}
		return rs.batch.Poll(now)
	}
	m.sched.run(ctx, start, poll)
	if rs.batch != nil {
		rs.batch.Close() // workers in flight go back to the queue
	}
	rs.wg.Wait()
	for _, r := range []*Results{m.liveness, m.readiness, m.startup} {
		r.close()
	}
	return nil
}

// goProbe runs w's probe through the Runner on a goroutine of its own.
func (m *Manager) goProbe(rs *runState, w *worker, status *kc.PodStatus, id string) {
	rs.wg.Add(1)
	go func() {
		defer rs.wg.Done()
		w.probe(rs.ctx, status, id)
		m.sched.finish(w, true, m.retire)
	}()
}

// startBatched starts w's probe in batch if it can take it.
func (m *Manager) startBatched(batch *probe.Batch, w *worker, status *kc.PodStatus, id string, now time.Time) bool {
	t := w.target(status, id)
	w.flight = inFlight{status: status, id: id, start: now}
	switch {
	case w.spec.HTTPGet != nil:
		req, err := httpRequest(&w.spec, t)
		return err == nil && batch.StartHTTP(now, req, w.batchDone)
	case w.spec.TCPSocket != nil:
		host, port, err := tcpTarget(&w.spec, t)
		return err == nil && batch.StartTCP(now, host, port, time.Duration(w.spec.TimeoutSeconds)*time.Second, w.batchDone)
	}
	return false
}

// batchDone ends w's batched probe; it runs on the scheduler's goroutine.
func (m *Manager) batchDone(w *worker, res probe.Result, msg string, err error) {
	rs, f := m.run, w.flight
	switch {
	case errors.Is(err, probe.ErrNotBatchable):
		m.goProbe(rs, w, f.status, f.id) // e.g. a redirect to https
	case rs.ctx.Err() != nil:
		m.sched.requeue(w) // Close: the prober stops
	default:
		w.record(f.id, res, msg, err, m.cfg.Clock.Since(f.start))
		m.sched.finish(w, true, m.retire)
	}
}
