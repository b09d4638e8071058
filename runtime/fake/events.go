package fake

import (
	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// eventBuffer is each subscriber's backlog. A subscriber that falls
// further behind loses events rather than slowing the state machine down.
const eventBuffer = 1000

type subscriber struct {
	ch chan *runtimeapi.ContainerEventResponse
}

// publishLocked sends a container event to every subscriber without
// blocking. Events share immutable snapshots, so building one is cheap.
func (r *Runtime) publishLocked(c *container, typ runtimeapi.ContainerEventType, at int64) {
	if len(r.st.subs) == 0 {
		return
	}
	statuses := make([]*runtimeapi.ContainerStatus, len(c.sb.containers))
	for i, x := range c.sb.containers {
		statuses[i] = x.status
	}
	ev := &runtimeapi.ContainerEventResponse{
		ContainerId:        c.id,
		ContainerEventType: typ,
		CreatedAt:          at,
		PodSandboxStatus:   c.sb.status,
		ContainersStatuses: statuses,
	}
	for s := range r.st.subs {
		select {
		case s.ch <- ev:
		default:
			r.st.dropped++
		}
	}
}

// Subscribe returns a channel of container events for in-process users and
// a function that ends the subscription (the channel is not closed).
func (r *Runtime) Subscribe() (<-chan *runtimeapi.ContainerEventResponse, func()) {
	s := &subscriber{ch: make(chan *runtimeapi.ContainerEventResponse, eventBuffer)}
	r.mu.Lock()
	r.st.subs[s] = struct{}{}
	r.mu.Unlock()
	return s.ch, func() {
		r.mu.Lock()
		delete(r.st.subs, s)
		r.mu.Unlock()
	}
}

// DroppedEvents counts events lost because a subscriber's buffer was full.
func (r *Runtime) DroppedEvents() int64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.st.dropped
}

// GetContainerEvents streams container events (CREATED, STARTED, STOPPED
// on any exit, DELETED) until the client goes away or the Runtime closes.
func (r *Runtime) GetContainerEvents(req *runtimeapi.GetEventsRequest, stream grpc.ServerStreamingServer[runtimeapi.ContainerEventResponse]) error {
	ctx := stream.Context()
	if err := r.enter(ctx, mGetContainerEvents); err != nil {
		return err
	}
	events, cancel := r.Subscribe()
	defer cancel()
	for {
		select {
		case ev := <-events:
			if err := stream.Send(ev); err != nil {
				return err
			}
		case <-ctx.Done():
			return nil
		case <-r.done:
			return errClosed
		}
	}
}
