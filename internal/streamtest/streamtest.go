// Package streamtest drives CRI streaming sessions from tests with
// client-go's clients, as kubectl and the API server do: exec and attach
// (remotecommand, SPDY or the CRI servers' WebSocket v4 protocol) and
// port-forward.
package streamtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	kuberemotecommand "k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
)

// Buffer is a bytes.Buffer for client-go's copy goroutines, which may
// still write after a cancelled session returned.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Session is what a client saw of an exec or attach.
type Session struct {
	Stdout, Stderr string
	Err            error
}

// Stream runs an exec or attach session on rawURL: over SPDY, or over
// WebSocket with the v4 channel protocol when websocket is set. cfg
// carries TLS settings (nil: plain HTTP); stdin may be nil; with tty,
// stderr comes on stdout. The error is the client's construction's.
func Stream(ctx context.Context, cfg *rest.Config, rawURL string, websocket bool, stdin io.Reader, tty bool) (Session, error) {
	ex, err := Executor(cfg, rawURL, websocket)
	if err != nil {
		return Session{}, err
	}
	var out, errOut Buffer
	opts := remotecommand.StreamOptions{Stdin: stdin, Stdout: &out, Tty: tty}
	if !tty {
		opts.Stderr = &errOut
	}
	err = ex.StreamWithContext(ctx, opts)
	return Session{Stdout: out.String(), Stderr: errOut.String(), Err: err}, nil
}

// Executor is the client of an exec or attach session at rawURL (cfg:
// as for Stream), for a test that drives the session itself.
func Executor(cfg *rest.Config, rawURL string, websocket bool) (remotecommand.Executor, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	if cfg == nil {
		cfg = &rest.Config{}
	}
	if cfg.Host == "" {
		cfg = rest.CopyConfig(cfg)
		cfg.Host = u.Scheme + "://" + u.Host
	}
	if websocket {
		return remotecommand.NewWebSocketExecutorForProtocols(cfg, "GET", rawURL, kuberemotecommand.StreamProtocolV4Name)
	}
	return remotecommand.NewSPDYExecutor(cfg, "POST", u)
}

// Forward forwards a local port on 127.0.0.1 to port through the
// port-forward session at rawURL. stop ends it and returns how the
// forwarder ended.
func Forward(cfg *rest.Config, rawURL string, port int) (local int, stop func() error, err error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return 0, nil, err
	}
	if cfg == nil {
		cfg = &rest.Config{}
	}
	transport, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		return 0, nil, err
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, "POST", u)
	stopCh, ready := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, stopCh, ready, io.Discard, io.Discard)
	if err != nil {
		return 0, nil, err
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	stop = func() error { close(stopCh); return <-done }
	select {
	case <-ready:
	case err := <-done:
		return 0, nil, fmt.Errorf("port-forward ended before it was ready: %w", err)
	case <-time.After(20 * time.Second):
		_ = stop()
		return 0, nil, errors.New("port-forward not ready after 20s")
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		_ = stop()
		return 0, nil, fmt.Errorf("port-forward ports %v: %v", ports, err)
	}
	return int(ports[0].Local), stop, nil
}
