package podworkers

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/internal/poll"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
)

type nowCache struct{}

func (nowCache) GetNewerThan(ctx context.Context, uid types.UID, _ time.Time) (*kc.PodStatus, error) {
	return &kc.PodStatus{ID: uid}, nil // it always has one
}

// KillPodNow callers that give up (their context ended, or the kubelet's
// timeout) are forgotten: before, each one stayed queued until the pod was
// terminated, which a termination that keeps failing never is.
func TestKillPodNowForgetsCallersThatGaveUp(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1700000000, 0))
	w, err := New(Config{Cache: nowCache{}, Clock: clk,
		PodSyncer: PodSyncerFunc(func(_ context.Context, w Work) error {
			if w.Type == TerminatePod {
				return errors.New("the runtime is down")
			}
			return nil
		})})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); w.Run(ctx) }()
	defer func() { cancel(); <-ran }()
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "a"}}
	w.UpdatePod(Update{Type: SyncPodCreate, Pod: p})
	for range 3 {
		callerCtx, giveUp := context.WithCancel(ctx)
		killed := make(chan error, 1)
		go func() { killed <- w.KillPodNow(callerCtx, p, KillPodOptions{}) }()
		poll.Eventually(t, func() bool { w.mu.Lock(); defer w.mu.Unlock(); return len(w.waiters["a"]) == 1 },
			10*time.Second, time.Millisecond)
		giveUp()
		require.ErrorIs(t, <-killed, context.Canceled)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	require.Empty(t, w.waiters, "callers that gave up are not kept")
}
