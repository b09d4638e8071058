package podworkers_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/podworkers"
)

// blockingEnv runs Workers whose PodSyncer reports each Work as it starts and
// then, for the Works block says, waits for its context to end (an image
// pull of minutes, a long grace period) and reports how it ended.
type blockingEnv struct {
	t       *testing.T
	w       *podworkers.Workers
	started chan podworkers.Work
	ended   chan error
}

func newBlockingEnv(t *testing.T, block func(podworkers.Work) bool) *blockingEnv {
	e := &blockingEnv{t: t, started: make(chan podworkers.Work, 10), ended: make(chan error, 10)}
	w, err := podworkers.New(podworkers.Config{
		PodSyncer: podworkers.PodSyncerFunc(func(ctx context.Context, w podworkers.Work) error {
			e.started <- w
			if !block(w) {
				return nil
			}
			<-ctx.Done()
			e.ended <- ctx.Err()
			return ctx.Err()
		}),
		Cache: cache{clocktesting.NewFakeClock(t0)}, Clock: clocktesting.NewFakeClock(t0),
	})
	require.NoError(t, err)
	e.w = w
	return e
}

// run starts Run until the returned stop is called; stop waits for it.
func (e *blockingEnv) run() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); assert.NoError(e.t, e.w.Run(ctx)) }()
	return func() { cancel(); <-ran }
}

func (e *blockingEnv) expectStart(what string) podworkers.Work {
	e.t.Helper()
	select {
	case w := <-e.started:
		require.Equal(e.t, what, w.Type.String()+" "+string(w.Pod.UID))
		return w
	case <-time.After(10 * time.Second):
		e.t.Fatalf("%s did not start within 10s", what)
	}
	return podworkers.Work{}
}

func (e *blockingEnv) expectCancelled(what string) {
	e.t.Helper()
	select {
	case err := <-e.ended:
		require.ErrorIs(e.t, err, context.Canceled, what)
	case <-time.After(10 * time.Second):
		e.t.Fatalf("%s was not cancelled within 10s", what)
	}
}

func deleted(uid, name string, grace int64) *v1.Pod {
	p := pod(uid, name)
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &metav1.Time{Time: t0}, &grace
	return p
}

// kubelet pod_workers UpdatePod: a pod deleted while it syncs has its sync
// cancelled ("Cancelling current pod sync"), not waited for; its
// termination starts at once with the deletion's grace period.
func TestWorkersCancelTheSyncOfAPodBeingDeleted(t *testing.T) {
	e := newBlockingEnv(t, func(w podworkers.Work) bool { return w.Type == podworkers.SyncPod })
	defer e.run()()
	e.w.UpdatePod(podworkers.Update{Type: podworkers.SyncPodCreate, Pod: pod("a", "web")})
	e.expectStart("SyncPod a")
	e.w.UpdatePod(podworkers.Update{Type: podworkers.SyncPodKill, Pod: deleted("a", "web", 30)})
	e.expectCancelled("the sync of a deleted pod")
	w := e.expectStart("TerminatePod a")
	assert.Equal(t, int64(30), w.GracePeriod)
}

// kubelet calculateEffectiveGracePeriod: a force deletion (grace 0) during
// a termination with a longer grace period cuts it short; it starts again
// at once with 1 s. A longer grace period changes nothing.
func TestWorkersShortenATerminationUnderWay(t *testing.T) {
	first := true
	e := newBlockingEnv(t, func(w podworkers.Work) bool {
		block := w.Type == podworkers.TerminatePod && first
		first = first && w.Type != podworkers.TerminatePod
		return block
	})
	defer e.run()()
	e.w.UpdatePod(podworkers.Update{Type: podworkers.SyncPodCreate, Pod: pod("a", "web")})
	e.expectStart("SyncPod a")
	e.w.UpdatePod(podworkers.Update{Type: podworkers.SyncPodKill, Pod: deleted("a", "web", 600)})
	assert.Equal(t, int64(600), e.expectStart("TerminatePod a").GracePeriod)
	e.w.UpdatePod(podworkers.Update{Type: podworkers.SyncPodKill, Pod: deleted("a", "web", 900)})
	assert.Empty(t, e.ended, "a longer grace period cancels nothing")
	e.w.UpdatePod(podworkers.Update{Type: podworkers.SyncPodKill, Pod: deleted("a", "web", 0)})
	e.expectCancelled("the 600 s termination")
	assert.Equal(t, int64(1), e.expectStart("TerminatePod a").GracePeriod)
	poll.Eventually(t, func() bool { _, ok := e.w.State("a"); return !ok }, 10*time.Second, time.Millisecond, "forgotten")
}

// A Work cut short because Run's context ended is not lost: the next Run
// does it (before, the pod stayed busy in the state machine for good and
// was never synced again).
func TestWorkersResumeWorkCutShortByRun(t *testing.T) {
	e := newBlockingEnv(t, func(podworkers.Work) bool { return true })
	stop := e.run()
	e.w.UpdatePod(podworkers.Update{Type: podworkers.SyncPodCreate, Pod: pod("a", "web")})
	e.expectStart("SyncPod a")
	stop()
	e.expectCancelled("the sync, by Run's end")
	stop = e.run()
	defer stop()
	e.expectStart("SyncPod a")
}
