package runtime

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CRIServer is a CRI runtime's gRPC server side, such as runtime/fake's
// Runtime: what NewInProcessClient calls directly.
type CRIServer interface {
	runtimeapi.RuntimeServiceServer
	runtimeapi.ImageServiceServer
}

// NewInProcessClient returns a Client that calls srv in this process
// rather than over a socket: the same timeouts, metrics and typed errors,
// and requests and responses copied as gRPC would copy them, without the
// encoding. It is for many agents in one process on in-memory runtimes
// (hollow nodes), where encoding every relist is most of the CPU. The
// streaming calls other than GetContainerEvents (the Stream* listings) are
// Unimplemented, as on containerd 1.7. Close does nothing; srv is the
// caller's.
func NewInProcessClient(srv CRIServer, opts ...Option) *Client {
	o := options{timeout: DefaultRequestTimeout, pullTimeout: DefaultImagePullTimeout, reconnectMaxDelay: DefaultReconnectMaxDelay}
	for _, opt := range opts {
		opt(&o)
	}
	c := &Client{opts: o}
	c.rs = inProcessRuntime{c: c, srv: srv}
	c.is = inProcessImages{c: c, srv: srv}
	return c
}

type inProcessRuntime struct {
	c   *Client
	srv runtimeapi.RuntimeServiceServer
}

type inProcessImages struct {
	c   *Client
	srv runtimeapi.ImageServiceServer
}

// unary runs one call through the Client's interceptor, on copies of the
// request and the response.
func unary[Req, Resp proto.Message](c *Client, ctx context.Context, method string, in Req,
	call func(context.Context, Req) (Resp, error)) (Resp, error) {
	var out Resp
	err := c.intercept(ctx, method, in, nil, nil, func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
		resp, err := call(ctx, proto.Clone(in).(Req))
		if err == nil {
			out = c.copyResponse(resp).(Resp)
		}
		return err
	})
	return out, err
}

// copyResponse is what gRPC's encoding gives a caller: a copy of resp, or
// under WithSharedListResponses, for a listing, the same items in a new
// slice (the Manager sorts some listings in place).
func (c *Client) copyResponse(resp proto.Message) proto.Message {
	if !c.opts.sharedLists {
		return proto.Clone(resp)
	}
	switch r := resp.(type) {
	case *runtimeapi.ListPodSandboxResponse:
		return &runtimeapi.ListPodSandboxResponse{Items: slices.Clone(r.Items)}
	case *runtimeapi.ListContainersResponse:
		return &runtimeapi.ListContainersResponse{Containers: slices.Clone(r.Containers)}
	case *runtimeapi.ListImagesResponse:
		return &runtimeapi.ListImagesResponse{Images: slices.Clone(r.Images)}
	case *runtimeapi.ListContainerStatsResponse:
		return &runtimeapi.ListContainerStatsResponse{Stats: slices.Clone(r.Stats)}
	case *runtimeapi.ListPodSandboxStatsResponse:
		return &runtimeapi.ListPodSandboxStatsResponse{Stats: slices.Clone(r.Stats)}
	}
	return proto.Clone(resp)
}

func errUnimplementedInProcess(method string) error {
	return status.Errorf(codes.Unimplemented, "method %s not implemented in process", method)
}

// GetContainerEvents runs the server's stream on a goroutine that ends
// with ctx; its events reach the returned client stream.
func (p inProcessRuntime) GetContainerEvents(ctx context.Context, in *runtimeapi.GetEventsRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[runtimeapi.ContainerEventResponse], error) {
	ctx, cancel := context.WithCancel(ctx)
	s := &eventPipe{ctx: ctx, cancel: cancel, events: make(chan *runtimeapi.ContainerEventResponse, 64), done: make(chan struct{})}
	go func() {
		err := p.srv.GetContainerEvents(proto.Clone(in).(*runtimeapi.GetEventsRequest), s)
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
		close(s.done)
	}()
	return s, nil
}

// eventPipe is both ends of an in-process GetContainerEvents stream.
type eventPipe struct {
	grpc.ServerStream // never called: the methods used are below
	ctx               context.Context
	cancel            context.CancelFunc
	events            chan *runtimeapi.ContainerEventResponse
	done              chan struct{}
	mu                sync.Mutex
	err               error
}

// Send is the server's side.
func (s *eventPipe) Send(ev *runtimeapi.ContainerEventResponse) error {
	select {
	case s.events <- proto.Clone(ev).(*runtimeapi.ContainerEventResponse):
		return nil
	case <-s.ctx.Done():
		return status.FromContextError(s.ctx.Err()).Err()
	}
}

// Recv is the client's side: the next event, or the stream's end.
func (s *eventPipe) Recv() (*runtimeapi.ContainerEventResponse, error) {
	select {
	case ev := <-s.events:
		return ev, nil
	case <-s.done:
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.err == nil {
			return nil, io.EOF
		}
		return nil, s.err
	case <-s.ctx.Done():
		s.cancel()
		return nil, status.FromContextError(s.ctx.Err()).Err()
	}
}

func (s *eventPipe) Context() context.Context     { return s.ctx }
func (s *eventPipe) Header() (metadata.MD, error) { return nil, nil }
func (s *eventPipe) Trailer() metadata.MD         { return nil }
func (s *eventPipe) CloseSend() error             { return nil }
func (s *eventPipe) SetHeader(metadata.MD) error  { return nil }
func (s *eventPipe) SendHeader(metadata.MD) error { return nil }
func (s *eventPipe) SetTrailer(metadata.MD)       {}
func (s *eventPipe) SendMsg(m any) error {
	ev, ok := m.(*runtimeapi.ContainerEventResponse)
	if !ok {
		return errors.New("in-process event stream: not an event")
	}
	return s.Send(ev)
}
func (s *eventPipe) RecvMsg(m any) error {
	ev, err := s.Recv()
	if err != nil {
		return err
	}
	proto.Merge(m.(proto.Message), ev)
	return nil
}
