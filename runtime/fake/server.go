package fake

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// maxSocketPath is the longest unix socket path Linux accepts (sun_path
// minus the terminating NUL).
const maxSocketPath = 107

// Register registers the Runtime's runtime and image services on s, for
// users who run their own gRPC server. Note that GracefulStop waits for
// open GetContainerEvents streams: call Close first, or use Stop.
func (r *Runtime) Register(s *grpc.Server) {
	runtimeapi.RegisterRuntimeServiceServer(s, r)
	runtimeapi.RegisterImageServiceServer(s, r)
}

// Serve serves CRI on endpoint ("unix:///path/to.sock") until ctx ends,
// then stops gracefully: calls still waiting (on latencies, stop grace
// periods, exec timeouts, event streams) are cancelled first. A stale
// socket file is replaced. Serve returns nil after a stop caused by ctx;
// it does not Close the Runtime, so streaming sessions (exec, attach,
// port-forward) and their server last until Close.
func (r *Runtime) Serve(ctx context.Context, endpoint string) error {
	lis, err := listen(endpoint)
	if err != nil {
		return err
	}
	return r.serve(ctx, lis)
}

// Start is Serve in the background, for tests: it returns once the socket
// accepts connections. stop stops the server, Closes the Runtime and waits
// for both; it may be called more than once.
func (r *Runtime) Start(endpoint string) (stop func(), err error) {
	lis, err := listen(endpoint)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.serve(ctx, lis)
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
			_ = r.Close()
		})
	}, nil
}

func (r *Runtime) serve(ctx context.Context, lis net.Listener) error {
	// GracefulStop waits for running handlers but does not cancel their
	// contexts, so handlers blocked on the (possibly fake) clock would
	// hold it forever. Every handler's context also ends at stop.
	stopping, stopCalls := context.WithCancel(context.Background())
	defer stopCalls()
	s := grpc.NewServer(
		grpc.SharedWriteBuffer(true), // as the client: idle connections hold no write buffer
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			ctx, cancel := mergeCancel(ctx, stopping)
			defer cancel()
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			ctx, cancel := mergeCancel(ss.Context(), stopping)
			defer cancel()
			return h(srv, ctxStream{ServerStream: ss, ctx: ctx})
		}),
	)
	r.Register(s)
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(lis) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	stopCalls()
	s.GracefulStop()
	<-errc
	return nil
}

// mergeCancel returns a child of parent that also ends when stop does.
func mergeCancel(parent, stop context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	unregister := context.AfterFunc(stop, cancel)
	return ctx, func() {
		unregister()
		cancel()
	}
}

type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s ctxStream) Context() context.Context { return s.ctx }

// listen opens the unix socket of a CRI endpoint ("unix:///abs/path.sock"),
// creating its directory and replacing a stale socket file. It refuses to
// replace anything else, or a socket someone is still serving on.
func listen(endpoint string) (net.Listener, error) {
	path, err := socketPath(endpoint)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("endpoint %q: %w", endpoint, err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("endpoint %q: %s exists and is not a socket", endpoint, path)
		}
		if c, err := net.Dial("unix", path); err == nil {
			_ = c.Close()
			return nil, fmt.Errorf("endpoint %q: a server is already listening on %s", endpoint, path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("endpoint %q: removing stale socket: %w", endpoint, err)
		}
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("endpoint %q: %w", endpoint, err)
	}
	return lis, nil
}

// socketPath returns the socket path of a "unix:///abs/path.sock"
// endpoint, or an error saying what is wrong with it.
func socketPath(endpoint string) (string, error) {
	path, ok := strings.CutPrefix(endpoint, "unix://")
	switch {
	case !ok:
		return "", fmt.Errorf("endpoint %q: want unix:///absolute/path.sock", endpoint)
	case !filepath.IsAbs(path):
		return "", fmt.Errorf("endpoint %q: socket path %q is not absolute (want unix:///absolute/path.sock)", endpoint, path)
	case len(path) > maxSocketPath:
		return "", fmt.Errorf("endpoint %q: socket path is %d bytes, longer than the %d a unix socket allows", endpoint, len(path), maxSocketPath)
	case strings.HasSuffix(path, "/"):
		return "", fmt.Errorf("endpoint %q: socket path names a directory", endpoint)
	}
	return filepath.Clean(path), nil
}

// StartTemp serves a new fake runtime on a unix socket in a new temporary
// directory, for an agent that embeds one when no real runtime answers.
// stop stops serving, closes the runtime and removes the directory.
func StartTemp(opts ...Option) (endpoint string, stop func(), err error) {
	dir, err := os.MkdirTemp("", "nodekit-fake-cri-")
	if err != nil {
		return "", nil, err
	}
	r := New(opts...)
	endpoint = "unix://" + filepath.Join(dir, "fake.sock")
	stopServing, err := r.Start(endpoint)
	if err != nil {
		r.Close()
		os.RemoveAll(dir)
		return "", nil, err
	}
	return endpoint, func() {
		stopServing()
		r.Close()
		os.RemoveAll(dir)
	}, nil
}
