package pleg

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/internal/poll"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/statuscache"
)

// The kubelet's EventedPLEG updateGlobalCache: with no event for a pod, a
// pod worker waiting in GetNewerThan for a status newer than its last sync
// is released by the cache's global timestamp within 5 s, not at the
// 300 s safety relist.
func TestEventedReleasesAWorkerWaitingOnTheCache(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	cache := statuscache.New()
	e, err := NewEvented(EventedConfig{Config: Config{Runtime: newStubRuntime(), Cache: cache, Clock: clk},
		Events: &stubEvents{feed: make(chan *kc.ContainerEvent)}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	waitCtx, stopWaiting := context.WithTimeout(ctx, 10*time.Second)
	defer stopWaiting()
	lastSync := clk.Now().Add(time.Second)
	released := make(chan error, 1)
	go func() { _, err := cache.GetNewerThan(waitCtx, "quiet-pod", lastSync); released <- err }()

	// The first global update comes one period after Run starts; the
	// waiter is released by it and not before.
	poll.Eventually(t, clk.HasWaiters, 10*time.Second, time.Millisecond, "the PLEG's timers armed")
	select {
	case err := <-released:
		t.Fatalf("released before any update: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	clk.Step(DefaultEventedGlobalCacheUpdatePeriod)
	select {
	case err := <-released:
		assert.NoError(t, err, "released by the global timestamp, not by its context")
	case <-waitCtx.Done():
		t.Fatal("a worker waiting on the cache was not released within one global update period")
	}
}
