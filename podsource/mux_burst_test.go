package podsource

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit-dev/nodekit/internal/poll"
)

// TestMuxBurstWhileConsumerCallsBack is issue #28's deadlock: sources send
// more than the Updates buffer holds while the one consumer, between reads,
// asks the mux what it holds (the agent's housekeeping asks AllSourcesReady
// and UIDs, container GC asks AllSourcesReady). A sender blocked on the full
// channel must not hold what those calls need.
func TestMuxBurstWhileConsumerCallsBack(t *testing.T) {
	for _, mode := range []NotificationMode{ModeIncremental, ModeSnapshot} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			const sources, perSource = 4, 50
			m := NewMux(MuxConfig{Mode: mode, Buffer: 1})
			var srcs []string
			for i := range sources {
				srcs = append(srcs, fmt.Sprintf("s%d", i))
			}
			m.Register(srcs...)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()

			var senders sync.WaitGroup
			for _, src := range srcs {
				senders.Add(1)
				go func() {
					defer senders.Done()
					assert.NoError(t, m.Update(ctx, PodUpdate{Op: SET, Source: src}))
					for i := range perSource {
						p := testPod(src, fmt.Sprintf("%s-%d", src, i), types.UID(fmt.Sprintf("%s-%d", src, i)))
						assert.NoError(t, m.Update(ctx, PodUpdate{Op: ADD, Source: src, Pods: []*v1.Pod{p}}))
					}
				}()
			}
			sent := make(chan struct{})
			go func() { senders.Wait(); close(sent) }()

			// The consumer: every read followed by calls back into the mux.
			consumed := make(chan struct{})
			go func() {
				defer close(consumed)
				for {
					select {
					case <-m.Updates():
						m.AllSourcesReady()
						m.UIDs()
						m.SourcesReady(srcs[0])
						m.Conflicts()
					case <-sent:
						return
					case <-ctx.Done():
						return
					}
				}
			}()
			select {
			case <-sent:
			case <-time.After(30 * time.Second):
				cancel() // release the senders, so the test ends and says why
				<-sent
				<-consumed
				t.Fatal("sources blocked: the consumer could not read while calling back into the mux (deadlock)")
			}
			<-consumed
			assert.True(t, m.AllSourcesReady())
			assert.Len(t, m.UIDs(), sources*perSource)
		})
	}
}

// TestMuxReadyOnlyOnceDelivered: a source counts as ready only once its
// first set is on the Updates channel, so that a consumer that sees
// AllSourcesReady and then drains the channel has every pod of that set
// (housekeeping and GC must never take a pod still in the channel for an
// orphan).
func TestMuxReadyOnlyOnceDelivered(t *testing.T) {
	m := NewMux(MuxConfig{Buffer: 1})
	m.Register("api")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Fill the buffer, so the SET's ADD must wait for the consumer.
	require.NoError(t, m.Update(ctx, PodUpdate{Op: ADD, Source: "api", Pods: []*v1.Pod{testPod("api", "a", "uid-a")}}))
	done := make(chan error, 1)
	go func() {
		done <- m.Update(ctx, PodUpdate{Op: SET, Source: "api", Pods: []*v1.Pod{testPod("api", "a", "uid-a"), testPod("api", "b", "uid-b")}})
	}()
	// The SET is merged (its pods are known) but not yet delivered.
	poll.Eventually(t, func() bool { return m.UIDs()["uid-b"] }, 10*time.Second, time.Millisecond)
	assert.False(t, m.AllSourcesReady(), "ready before its first set reached the channel")
	got := summarize([]PodUpdate{<-m.Updates()})
	require.NoError(t, <-done)
	assert.True(t, m.AllSourcesReady())
	got = append(got, summarize(drain(m))...)
	assert.Equal(t, []emitted{{ADD, "api", []string{"a"}}, {ADD, "api", []string{"b"}}}, got)
}
