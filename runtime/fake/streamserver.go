package fake

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"k8s.io/cri-streaming/pkg/streaming"
)

// streamServer serves the URLs that Exec, Attach and PortForward hand out,
// on a loopback port of its own, as containerd's streaming server does.
//
// It does not use streaming.Server.Start: that listens itself, so a URL
// handed out before it runs would carry port 0, and its Stop leaves
// hijacked (upgraded) connections open. Here the listener exists before
// the first URL, and stop closes every connection.
type streamServer struct {
	streaming.Server
	http   *http.Server
	served chan struct{} // closed when http.Serve has returned

	mu       sync.Mutex
	conns    map[*streamConn]struct{}
	closed   bool
	handlers sync.WaitGroup // running ServeHTTP calls, upgraded ones too
}

// startStreamServer serves rt on 127.0.0.1 (never another address: tests
// run where only loopback traffic is allowed) with containerd's defaults.
func startStreamServer(rt streaming.Runtime) (*streamServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("streaming server: %w", err)
	}
	cfg := streaming.DefaultConfig
	cfg.Addr = ln.Addr().String()
	cfg.BaseURL = &url.URL{Scheme: "http", Host: cfg.Addr}
	srv, err := streaming.NewServer(cfg, rt)
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("streaming server: %w", err)
	}
	s := &streamServer{Server: srv, served: make(chan struct{}), conns: map[*streamConn]struct{}{}}
	s.http = &http.Server{
		Handler:           http.HandlerFunc(s.serveHTTP),
		ConnContext:       connContext,
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		defer close(s.served)
		_ = s.http.Serve(streamListener{Listener: ln, s: s})
	}()
	return s, nil
}

func (s *streamServer) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		http.Error(w, "fake runtime is closed", http.StatusServiceUnavailable)
		return
	}
	s.handlers.Add(1)
	s.mu.Unlock()
	defer s.handlers.Done()
	s.Server.ServeHTTP(w, r)
}

// stop closes the listener and every connection, upgraded ones included,
// and waits for the handlers. The caller has closed the Runtime first, so
// exec and attach sessions end by themselves: their connections are left
// to close after the client got the error. The others (port forwards,
// which last as long as their connection, and idle ones) are closed now.
func (s *streamServer) stop() {
	_ = s.http.Close()
	<-s.served
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	for _, c := range s.openConns() {
		if !c.inSession() {
			_ = c.Close()
		}
	}
	s.handlers.Wait()
	for _, c := range s.openConns() {
		_ = c.Close()
	}
}

func (s *streamServer) openConns() []*streamConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	conns := make([]*streamConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	return conns
}

// streamListener tracks the connections it accepts.
type streamListener struct {
	net.Listener
	s *streamServer
}

func (l streamListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	sc := &streamConn{Conn: c, s: l.s}
	l.s.mu.Lock()
	l.s.conns[sc] = struct{}{}
	l.s.mu.Unlock()
	return sc, nil
}

// streamConn is an accepted connection whose context ends when the client
// goes away. net/http stops watching a connection once a handler has
// upgraded it to SPDY or WebSocket, so without this a request's context
// would outlive its client, and with it a never-ending exec.
type streamConn struct {
	net.Conn
	s *streamServer

	mu      sync.Mutex
	cancel  context.CancelFunc
	gone    bool
	session bool // an exec or attach runs on it

	closeOnce sync.Once
	closeErr  error
}

// connKey is the context key of a request's *streamConn.
type connKey struct{}

// connContext gives each connection a context that hangUp ends.
func connContext(ctx context.Context, c net.Conn) context.Context {
	sc, ok := c.(*streamConn)
	if !ok {
		return ctx
	}
	ctx, cancel := context.WithCancel(context.WithValue(ctx, connKey{}, sc))
	sc.mu.Lock()
	sc.cancel = cancel
	gone := sc.gone
	sc.mu.Unlock()
	if gone {
		cancel()
	}
	return ctx
}

func (c *streamConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	// net/http aborts its own pending read with a past deadline when a
	// handler takes the connection over: that is no hang-up.
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		c.hangUp()
	}
	return n, err
}

// Close is idempotent: after stop has closed a connection, SPDY's own
// close would otherwise get an error, and then linger a second for
// someone to report it to.
func (c *streamConn) Close() error {
	c.closeOnce.Do(func() {
		c.hangUp()
		c.s.mu.Lock()
		delete(c.s.conns, c)
		c.s.mu.Unlock()
		c.closeErr = c.Conn.Close()
	})
	return c.closeErr
}

// markSession records that an exec or attach runs on ctx's connection.
func markSession(ctx context.Context) {
	if c, ok := ctx.Value(connKey{}).(*streamConn); ok {
		c.mu.Lock()
		c.session = true
		c.mu.Unlock()
	}
}

func (c *streamConn) inSession() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

func (c *streamConn) hangUp() {
	c.mu.Lock()
	c.gone = true
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// streams returns the Runtime's streaming server, starting it on first use.
func (r *Runtime) streams() (*streamServer, error) {
	r.streamMu.Lock()
	defer r.streamMu.Unlock()
	if r.streamClosed {
		return nil, errClosed
	}
	if r.stream == nil {
		s, err := startStreamServer(streamRuntime{r})
		if err != nil {
			return nil, err
		}
		r.stream = s
	}
	return r.stream, nil
}

// stopStreams stops the streaming server for good; Close calls it after
// closing done, so that handlers waiting on the Runtime return.
func (r *Runtime) stopStreams() {
	r.streamMu.Lock()
	s := r.stream
	r.stream, r.streamClosed = nil, true
	r.streamMu.Unlock()
	if s != nil {
		s.stop()
	}
}
