package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"runtime"
)

// DefaultParallelPodStartsPerCPU times GOMAXPROCS is how many pods are
// let into their runtime start calls at once when
// ManagerConfig.MaxParallelPodStarts is zero.
//
// Measured on 2 cores with containerd 2.4 and runc (250 pods at once,
// SyncPod each): unbounded, all were running after 23.3-24.0 s with a
// median of 21 s; 16 at a time, after 20.1 s, median 9.9 s; 6 at a time,
// after 19.7 s, median 8.8 s. The runtime's own work is CPU-bound, and
// starting everything at once spreads it thin over every pod.
const DefaultParallelPodStartsPerCPU = 3

// startSlots bounds how many SyncPods are in the runtime's start calls
// (RunPodSandbox, CreateContainer, StartContainer) at once; nil is
// unbounded. A channel's blocked senders are served in order, so pods get
// their turns in the order they asked.
type startSlots chan struct{}

func newStartSlots(limit int) startSlots {
	switch {
	case limit < 0:
		return nil
	case limit == 0:
		limit = DefaultParallelPodStartsPerCPU * runtime.GOMAXPROCS(0)
	}
	return make(startSlots, limit)
}

// startSlot is one SyncPod's hold on a slot: taken before its first start
// call and kept until the sync ends, so that a pod that began starting
// finishes before pods behind it begin, except while the sync waits on
// something other than the runtime's start work (an image pull, a
// postStart hook). It travels in the sync's context.
type startSlot struct {
	slots startSlots
	held  bool
}

type startSlotKey struct{}

func withStartSlot(ctx context.Context, s *startSlot) context.Context {
	return context.WithValue(ctx, startSlotKey{}, s)
}

// errNoTurn: the sync ended while it waited for its turn, before any
// runtime call. Nothing was tried, so no failure event is recorded and no
// start error counted: the pod is being torn down.
var errNoTurn = errors.New("the sync ended while waiting for its turn to start")

// takeStartSlot waits for a slot unless the sync holds one (or there is
// no bound); it fails, with errNoTurn and ctx's error, only when ctx ends
// first.
func takeStartSlot(ctx context.Context) error {
	s, _ := ctx.Value(startSlotKey{}).(*startSlot)
	if s == nil || s.slots == nil || s.held {
		return nil
	}
	select {
	case s.slots <- struct{}{}:
		s.held = true
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", errNoTurn, ctx.Err())
	}
}

// giveStartSlot hands the sync's slot back, if it holds one.
func giveStartSlot(ctx context.Context) {
	if s, _ := ctx.Value(startSlotKey{}).(*startSlot); s != nil && s.held {
		<-s.slots
		s.held = false
	}
}
