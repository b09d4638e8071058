package prober

import (
	"context"
	"fmt"
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

// Run ends with its context even when nobody reads the results any more
// (the agent's loop, their one reader, ended with the same context) and
// the scheduler is blocked sending a change on a full channel: before, Run
// never returned and the agent's shutdown hung.
func TestRunReturnsWhileNobodyReadsResults(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(10000, 0))
	st := &statuses{m: map[types.UID]*kc.PodStatus{}}
	m, err := New(Config{Statuses: st, Runner: newScript(), Clock: clk, Rand: func() float64 { return 0 }})
	require.NoError(t, err)
	const pods = 40 // twice the channels' capacity (UpdatesCapacity: 20)
	for i := range pods {
		uid := types.UID(fmt.Sprint("uid-", i))
		st.set(uid, "c", fmt.Sprint("id-", i), kc.ContainerStateRunning, clk.Now(), 0)
		m.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: string(uid), Namespace: "ns", UID: uid},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", ReadinessProbe: execProbe("ready")}}}})
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- m.Run(ctx) }()
	poll.Eventually(t, func() bool { return len(m.readiness.updates) == cap(m.readiness.updates) },
		10*time.Second, time.Millisecond, "a new container's first result for each pod fills the channel")
	cancel()
	select {
	case err := <-ran:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of its context's end")
	}
}
