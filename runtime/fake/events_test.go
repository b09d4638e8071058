package fake

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit-dev/nodekit/internal/poll"
)

// eventStream is the server side of GetContainerEvents, in process.
type eventStream struct {
	grpc.ServerStream // nil: only Context and Send are used
	ctx               context.Context
	sent              chan *runtimeapi.ContainerEventResponse
}

func (s *eventStream) Context() context.Context { return s.ctx }

func (s *eventStream) Send(ev *runtimeapi.ContainerEventResponse) error {
	s.sent <- ev
	return nil
}

// drain returns the events buffered on ch without waiting.
func drain(ch <-chan *runtimeapi.ContainerEventResponse) []*runtimeapi.ContainerEventResponse {
	var out []*runtimeapi.ContainerEventResponse
	for {
		select {
		case ev := <-ch:
			out = append(out, ev)
		default:
			return out
		}
	}
}

func TestEvents(t *testing.T) {
	r, clk := newTest(t)
	ctx := context.Background()
	events, cancel := r.Subscribe()
	defer cancel()

	pc := podConfig("p")
	sb := runPod(t, r, pc)
	keep := create(t, r, sb, pc, testbin("keep"))
	id := create(t, r, sb, pc, testbin("s", "sleep", "2"))
	start(t, r, id)
	clk.Step(2 * time.Second)
	_, err := r.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id})
	require.NoError(t, err)

	got := drain(events)
	require.Len(t, got, 5)
	type ev struct {
		id  string
		typ runtimeapi.ContainerEventType
		at  time.Duration
		n   int // container statuses in the event
	}
	want := []ev{
		{keep, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, 0, 1},
		{id, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, 0, 2},
		{id, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, 0, 2},
		{id, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, 2 * time.Second, 2},
		{id, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, 2 * time.Second, 1},
	}
	for i, w := range want {
		e := got[i]
		assert.Equal(t, w.id, e.ContainerId, i)
		assert.Equal(t, w.typ, e.ContainerEventType, i)
		assert.Equal(t, epoch.Add(w.at).UnixNano(), e.CreatedAt, i)
		assert.Equal(t, sb, e.PodSandboxStatus.Id, i)
		assert.Len(t, e.ContainersStatuses, w.n, i)
	}
	stopped := got[3].ContainersStatuses[1]
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, stopped.State)
	assert.Equal(t, "Completed", stopped.Reason)

	// Stopping the sandbox reports the killed container, with the sandbox
	// status as of then.
	start(t, r, keep)
	_, err = r.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb})
	require.NoError(t, err)
	got = drain(events)
	require.Len(t, got, 2)
	assert.Equal(t, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, got[1].ContainerEventType)
	assert.Equal(t, int32(137), got[1].ContainersStatuses[0].ExitCode)

	cancel()
	runPod(t, r, podConfig("unheard"))
	run(t, r, testbin("unheard"))
	assert.Empty(t, drain(events), "no events after unsubscribing")
}

func TestEventsSlowSubscriber(t *testing.T) {
	r, _ := newTest(t)
	slow, cancelSlow := r.Subscribe()
	defer cancelSlow()
	fast, cancelFast := r.Subscribe()
	defer cancelFast()

	pc := podConfig("p")
	sb := runPod(t, r, pc)
	const n = eventBuffer + 10
	received := 0
	for i := range n {
		create(t, r, sb, pc, testbin(fmt.Sprint("c", i)))
		received += len(drain(fast))
	}
	assert.Equal(t, n, received, "a reading subscriber gets everything")
	assert.Len(t, drain(slow), eventBuffer)
	assert.Equal(t, int64(10), r.DroppedEvents())
}

func TestGetContainerEventsInProcess(t *testing.T) {
	r, _ := newTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	stream := &eventStream{ctx: ctx, sent: make(chan *runtimeapi.ContainerEventResponse, 10)}
	done := make(chan error, 1)
	go func() { done <- r.GetContainerEvents(&runtimeapi.GetEventsRequest{}, stream) }()

	// The subscription starts asynchronously; create until one arrives.
	pc := podConfig("p")
	sb := runPod(t, r, pc)
	var ev *runtimeapi.ContainerEventResponse
	i := 0
	poll.Eventually(t, func() bool {
		create(t, r, sb, pc, testbin(fmt.Sprint("c", i)))
		i++
		select {
		case ev = <-stream.sent:
			return true
		default:
			return false
		}
	}, 10*time.Second, 0, "a container event on the subscription")
	assert.Equal(t, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, ev.ContainerEventType)
	cancel()
	require.NoError(t, <-done)
}
