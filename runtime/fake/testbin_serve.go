package fake

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"k8s.io/utils/clock"
)

// serveRun is testbin's serve/grpc process. Without host ports it only
// prints what the real one prints; with them it listens on a loopback
// address for real, so probes and tests can talk to it.
func serveRun(mode, addr, hostname string, unhealthyAfter time.Duration) func(Proc) func() {
	return func(p Proc) func() {
		bind, ok := bindAddr(addr, p)
		if !p.HostPorts || !ok {
			p.Print(Stdout, "listening on "+addr)
			return nil
		}
		ln, err := net.Listen("tcp", bind)
		if err != nil {
			p.Print(Stderr, "testbin: "+err.Error())
			p.Exit(1)
			return nil
		}
		p.Print(Stdout, "listening on "+addr)
		if mode == "grpc" {
			return serveGRPC(p, ln)
		}
		s := &httpState{clock: p.Clock, start: p.Clock.Now(), unhealthyAfter: unhealthyAfter, hostname: hostname, exit: p.Exit}
		srv := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second}
		p.Go(func() { _ = srv.Serve(ln) })
		return func() {
			// Stop accepting at once; let a request in flight (an /exit
			// that made the container exit) finish its response.
			_ = ln.Close()
			p.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				if srv.Shutdown(ctx) != nil {
					_ = srv.Close()
				}
			})
		}
	}
}

// bindAddr maps testbin's listen address to one the fake may use: only
// loopback addresses, 127.0.0.1 for host-network pods and the pod IP for
// the others (their 127.0.0.1 is private to the pod on a real node).
func bindAddr(addr string, p Proc) (string, bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", false
	}
	if p.HostNetwork {
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			host = "127.0.0.1"
		}
		return net.JoinHostPort(host, port), true
	}
	if ip := net.ParseIP(p.PodIP); ip == nil || !ip.IsLoopback() {
		return "", false
	}
	return net.JoinHostPort(p.PodIP, port), true
}

func serveGRPC(p Proc, ln net.Listener) func() {
	gs := grpc.NewServer()
	hs := health.NewServer() // "" starts SERVING
	hs.SetServingStatus("ready", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("notready", healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(gs, hs)
	p.Go(func() { _ = gs.Serve(ln) })
	return gs.Stop
}

// httpState is serve mode's mutable state, as in the real binary.
type httpState struct {
	clock          clock.PassiveClock
	start          time.Time
	hostname       string
	exit           func(code int32)
	mu             sync.Mutex
	unhealthyAfter time.Duration
	healthFailed   bool
	notReady       bool
}

// reply sets Content-Length so that a response is complete on the wire
// even if the container exits (closing the server) right after.
func reply(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	_, _ = io.WriteString(w, body)
}

func (s *httpState) set(f func()) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		f()
		s.mu.Unlock()
		reply(w, http.StatusOK, "ok")
	}
}

func (s *httpState) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		now := s.clock.Now()
		s.mu.Lock()
		bad := s.healthFailed || (s.unhealthyAfter > 0 && now.Sub(s.start) >= s.unhealthyAfter)
		s.mu.Unlock()
		if bad {
			reply(w, http.StatusInternalServerError, "unhealthy")
			return
		}
		reply(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("/healthz/fail", s.set(func() { s.healthFailed = true }))
	mux.HandleFunc("/healthz/ok", s.set(func() { s.healthFailed, s.unhealthyAfter = false, 0 }))
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		nr := s.notReady
		s.mu.Unlock()
		if nr {
			reply(w, http.StatusServiceUnavailable, "not ready")
			return
		}
		reply(w, http.StatusOK, "ready")
	})
	mux.HandleFunc("/readyz/fail", s.set(func() { s.notReady = true }))
	mux.HandleFunc("/readyz/ok", s.set(func() { s.notReady = false }))
	mux.HandleFunc("/exit", func(w http.ResponseWriter, r *http.Request) {
		code := 0
		if v := r.URL.Query().Get("code"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				reply(w, http.StatusBadRequest, "bad code")
				return
			}
			code = n
		}
		// The real binary exits ~100ms after replying; exiting before the
		// reply keeps tests deterministic: once the response is read, the
		// container is EXITED and its port closed.
		s.exit(exitCode(code))
		reply(w, http.StatusOK, fmt.Sprintf("exiting with %d", code))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusOK, "hello from "+s.hostname)
	})
	return mux
}
