// Command testbin is the multi-mode test workload of nodekit's integration
// tests (image nodekit.local/testbin:1: entrypoint /testbin, default cmd
// "serve", env PORT=8080). It is built static (CGO_ENABLED=0).
//
// An in-memory fake runtime mimics these semantics; keep this list and the
// code in sync and change neither lightly.
//
// The mode is the first argument; without arguments the mode is "serve".
// Unless stated otherwise an exit status is 0. "Signal" below means SIGTERM or
// SIGINT. All messages end with a newline; HTTP response bodies are exactly the
// quoted text, without a trailing newline.
//
//	serve
//	    HTTP server on $ADDR; if ADDR is empty, on 127.0.0.1:$PORT (PORT
//	    defaults to 8080). Once listening it prints "listening on ADDR" to
//	    stdout. Routes (any method):
//	      /healthz       200 "ok"; 500 "unhealthy" once $UNHEALTHY_AFTER (a Go
//	                     duration such as 5s, measured from start) has
//	                     elapsed, or after /healthz/fail was called.
//	      /healthz/fail  make /healthz fail; replies 200 "ok".
//	      /healthz/ok    make /healthz succeed again (clears /healthz/fail and
//	                     cancels $UNHEALTHY_AFTER); replies 200 "ok".
//	      /readyz        200 "ready", or 503 "not ready" after /readyz/fail.
//	      /readyz/fail   make /readyz fail; replies 200 "ok".
//	      /readyz/ok     make /readyz succeed again; replies 200 "ok".
//	      /exit?code=N   replies 200 "exiting with N", then exits with status N
//	                     (default 0) about 100ms later.
//	      /              200 "hello from <hostname>" (any other path too).
//	    On a signal it prints "got terminated, exiting" to stdout and exits 0.
//	    If it cannot listen it prints the error to stderr and exits 1.
//
//	sleep [SECONDS]
//	    Sleeps SECONDS (may be fractional; forever if omitted) or until a
//	    signal, then exits 0 either way. Prints nothing.
//
//	exit [N]
//	    Prints "exiting with N" to stdout and exits with status N (default 0)
//	    immediately.
//
//	write PATH TEXT [N]
//	    Writes TEXT (no newline added) to the file PATH, replacing it, and
//	    exits with status N (default 0), printing nothing: a container's
//	    termination message (PATH its terminationMessagePath). If the file
//	    cannot be written it prints the error to stderr and exits 1.
//
//	alloc MB
//	    Allocates MB MiB and writes to every page, prints "allocated MB MiB"
//	    to stdout, then sleeps until a signal and exits 0. Meant for memory
//	    limit / OOM-kill tests (the kernel kills it while touching pages when
//	    the limit is lower than MB MiB).
//
//	burn
//	    Spins on one CPU until a signal, then exits 0. Prints nothing. Meant
//	    for CPU usage and CFS throttling tests.
//
//	spew MB [KIBPS]
//	    Prints MB MiB of 100-byte lines to stdout ("000000001 xxx...x"), at
//	    most KIBPS KiB per second if given, then "spewed MB MiB", and sleeps
//	    until a signal, exiting 0. Meant for log rotation tests.
//
//	echo ARGS...
//	    Prints ARGS joined by single spaces plus a newline to stdout (just a
//	    newline without ARGS): ["/testbin","echo","hi"] prints "hi\n".
//
//	grpc
//	    gRPC server on $ADDR / 127.0.0.1:$PORT (same defaults as serve) with
//	    the standard grpc.health.v1.Health service: service "" (overall)
//	    SERVING, "ready" SERVING, "notready" NOT_SERVING, any other service
//	    name returns status NotFound (Check; Watch reports SERVICE_UNKNOWN),
//	    as the standard health server does. Once listening it prints
//	    "listening on ADDR" to stdout. On a signal it prints "got terminated,
//	    exiting", stops gracefully (open RPCs get up to 2s) and exits 0.
//
//	stderr MSG...
//	    Prints MSG (the arguments joined by single spaces) plus a newline to
//	    stderr and exits 0.
//
//	hostname
//	    Prints the hostname to stdout.
//
//	cat
//	    Copies stdin to stdout until end of input, then exits 0 (at once on
//	    /dev/null, the stdin of a container without stdin). As a container's
//	    process with stdin, it thus prints each line an attached client sends
//	    and exits when stdin closes (stdinOnce). On a signal it exits 0.
//
//	read FILE...
//	    Prints each file's content to stdout (the tests read a container's
//	    cgroup files with it); exits 1 if one cannot be read.
//
//	tty
//	    Prints the name of the terminal on stdin (such as /dev/pts/0) to
//	    stdout and exits 0; if stdin is not a terminal, prints "not a tty" and
//	    exits 1, like coreutils tty.
//
//	anything else
//	    Prints `testbin: unknown mode "X"` to stderr and exits 2. Malformed
//	    numeric arguments (sleep, exit, alloc) likewise print a message to
//	    stderr and exit 2.
package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// forever is the duration used for "sleep until a signal".
const forever = time.Duration(1<<63 - 1)

// run executes one mode and returns the process exit status. Modes that exit
// with a status chosen at runtime (serve's /exit) call os.Exit themselves.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	mode := "serve"
	if len(args) > 0 {
		mode, args = args[0], args[1:]
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "testbin: "+format+"\n", a...)
		return 2
	}
	switch mode {
	case "serve":
		return serve(stdout, stderr)
	case "sleep":
		d := forever
		if len(args) > 0 {
			s, err := strconv.ParseFloat(args[0], 64)
			if err != nil || s < 0 {
				return usage("sleep: bad SECONDS %q", args[0])
			}
			d = time.Duration(s * float64(time.Second))
		}
		waitSignal(d)
		return 0
	case "exit":
		code := 0
		if len(args) > 0 {
			n, err := strconv.Atoi(args[0])
			if err != nil {
				return usage("exit: bad N %q", args[0])
			}
			code = n
		}
		fmt.Fprintf(stdout, "exiting with %d\n", code)
		return code
	case "write":
		if len(args) < 2 {
			return usage("write: want PATH TEXT [N]")
		}
		code := 0
		if len(args) > 2 {
			n, err := strconv.Atoi(args[2])
			if err != nil {
				return usage("write: bad N %q", args[2])
			}
			code = n
		}
		if err := os.WriteFile(args[0], []byte(args[1]), 0o644); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		return code
	case "alloc":
		if len(args) == 0 {
			return usage("alloc: MB is required")
		}
		mb, err := strconv.Atoi(args[0])
		if err != nil || mb < 0 {
			return usage("alloc: bad MB %q", args[0])
		}
		buf := make([]byte, mb<<20)
		for i := 0; i < len(buf); i += 4096 {
			buf[i] = 1
		}
		fmt.Fprintf(stdout, "allocated %d MiB\n", mb)
		waitSignal(forever)
		runtimeKeepAlive(buf)
		return 0
	case "burn":
		return burn()
	case "spew":
		mb, rate, msg := parseSpew(args)
		if msg != "" {
			return usage("%s", msg)
		}
		spew(stdout, mb, rate)
		waitSignal(forever)
		return 0
	case "echo":
		fmt.Fprintln(stdout, strings.Join(args, " "))
		return 0
	case "grpc":
		return serveGRPC(stdout, stderr)
	case "stderr":
		fmt.Fprintln(stderr, strings.Join(args, " "))
		return 0
	case "hostname":
		h, err := os.Hostname()
		if err != nil {
			fmt.Fprintf(stderr, "testbin: hostname: %v\n", err)
			return 1
		}
		fmt.Fprintln(stdout, h)
		return 0
	case "cat":
		return cat(stdin, stdout, stderr)
	case "read":
		for _, f := range args {
			b, err := os.ReadFile(f)
			if err != nil {
				fmt.Fprintf(stderr, "testbin: read: %v\n", err)
				return 1
			}
			stdout.Write(b)
		}
		return 0
	case "tty":
		name, ok := terminalName(stdin)
		if !ok {
			fmt.Fprintln(stdout, "not a tty")
			return 1
		}
		fmt.Fprintln(stdout, name)
		return 0
	default:
		return usage("unknown mode %q", mode)
	}
}

// cat copies stdin to stdout until end of input or a signal.
func cat(stdin io.Reader, stdout, stderr io.Writer) int {
	sigs := notifyTerm()
	defer signal.Stop(sigs)
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(stdout, stdin)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			fmt.Fprintf(stderr, "testbin: cat: %v\n", err)
			return 1
		}
	case <-sigs:
	}
	return 0
}

// terminalName returns the name of the terminal r is, if it is one. With
// the standard library only (this module stays small), a terminal is a
// character device other than /dev/null, which is what a container
// without stdin or terminal gets.
func terminalName(r io.Reader) (string, bool) {
	f, ok := r.(*os.File)
	if !ok {
		return "", false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return "", false
	}
	if null, err := os.Stat(os.DevNull); err == nil && os.SameFile(fi, null) {
		return "", false
	}
	if name, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd())); err == nil {
		return name, true
	}
	return f.Name(), true
}

var sink []byte

// runtimeKeepAlive keeps the allocation reachable until the process exits.
func runtimeKeepAlive(b []byte) { sink = b }

func notifyTerm() chan os.Signal {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	return c
}

// waitSignal returns after d or on SIGTERM/SIGINT, whichever comes first.
func waitSignal(d time.Duration) {
	c := notifyTerm()
	if d == forever {
		<-c
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c:
	case <-t.C:
	}
}

func listenAddr() string {
	if a := os.Getenv("ADDR"); a != "" {
		return a
	}
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	return "127.0.0.1:" + port
}

// server holds the mutable state of serve mode.
type server struct {
	mu             sync.Mutex
	start          time.Time
	unhealthyAfter time.Duration // 0: never
	healthFailed   bool
	notReady       bool
	exit           func(code int) // os.Exit, replaced in tests
}

func newServer(unhealthyAfter time.Duration) *server {
	return &server{start: time.Now(), unhealthyAfter: unhealthyAfter, exit: os.Exit}
}

func reply(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	io.WriteString(w, body)
}

func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		bad := s.healthFailed || (s.unhealthyAfter > 0 && time.Since(s.start) >= s.unhealthyAfter)
		s.mu.Unlock()
		if bad {
			reply(w, http.StatusInternalServerError, "unhealthy")
			return
		}
		reply(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("/healthz/fail", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.healthFailed = true
		s.mu.Unlock()
		reply(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("/healthz/ok", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.healthFailed = false
		s.unhealthyAfter = 0
		s.mu.Unlock()
		reply(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		nr := s.notReady
		s.mu.Unlock()
		if nr {
			reply(w, http.StatusServiceUnavailable, "not ready")
			return
		}
		reply(w, http.StatusOK, "ready")
	})
	mux.HandleFunc("/readyz/fail", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.notReady = true
		s.mu.Unlock()
		reply(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("/readyz/ok", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.notReady = false
		s.mu.Unlock()
		reply(w, http.StatusOK, "ok")
	})
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
		reply(w, http.StatusOK, fmt.Sprintf("exiting with %d", code))
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		go func() {
			time.Sleep(100 * time.Millisecond)
			s.exit(code)
		}()
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h, _ := os.Hostname()
		reply(w, http.StatusOK, "hello from "+h)
	})
	return mux
}

func serve(stdout, stderr io.Writer) int {
	var unhealthyAfter time.Duration
	if v := os.Getenv("UNHEALTHY_AFTER"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			fmt.Fprintf(stderr, "testbin: bad UNHEALTHY_AFTER %q: %v\n", v, err)
			return 2
		}
		unhealthyAfter = d
	}
	s := newServer(unhealthyAfter)
	sigs := notifyTerm()
	addr := listenAddr()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(stderr, "testbin: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "listening on %s\n", addr)
	srv := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-sigs:
		fmt.Fprintln(stdout, "got terminated, exiting")
		srv.Close()
		return 0
	case err := <-errc:
		fmt.Fprintf(stderr, "testbin: %v\n", err)
		return 1
	}
}

func serveGRPC(stdout, stderr io.Writer) int {
	sigs := notifyTerm()
	addr := listenAddr()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(stderr, "testbin: %v\n", err)
		return 1
	}
	gs := grpc.NewServer()
	hs := health.NewServer() // "" starts SERVING
	hs.SetServingStatus("ready", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("notready", healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(gs, hs)
	fmt.Fprintf(stdout, "listening on %s\n", addr)
	errc := make(chan error, 1)
	go func() { errc <- gs.Serve(ln) }()
	select {
	case <-sigs:
		fmt.Fprintln(stdout, "got terminated, exiting")
		done := make(chan struct{})
		go func() { gs.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-time.After(2 * time.Second): // e.g. open Watch streams
			gs.Stop()
		}
		return 0
	case err := <-errc:
		fmt.Fprintf(stderr, "testbin: %v\n", err)
		return 1
	}
}

// burn spins until a signal.
func burn() int {
	sigs := notifyTerm()
	defer signal.Stop(sigs)
	for n := 0; ; n++ {
		if n%(1<<20) == 0 {
			select {
			case <-sigs:
				return 0
			default:
			}
		}
	}
}

func parseSpew(args []string) (mb, kibps int, msg string) {
	if len(args) == 0 {
		return 0, 0, "spew: MB is required"
	}
	mb, err := strconv.Atoi(args[0])
	if err != nil || mb < 0 {
		return 0, 0, fmt.Sprintf("spew: bad MB %q", args[0])
	}
	if len(args) > 1 {
		if kibps, err = strconv.Atoi(args[1]); err != nil || kibps <= 0 {
			return 0, 0, fmt.Sprintf("spew: bad KIBPS %q", args[1])
		}
	}
	return mb, kibps, ""
}

// spew writes mb MiB of numbered 100-byte lines, kibps KiB a second at
// most (0: as fast as it can), then its summary line.
func spew(w io.Writer, mb, kibps int) {
	line := []byte("000000000 " + strings.Repeat("x", 89) + "\n")
	start := time.Now()
	for i := 1; i*len(line) <= mb<<20; i++ {
		copy(line, fmt.Sprintf("%09d", i))
		w.Write(line)
		if kibps > 0 && i%10 == 0 {
			due := start.Add(time.Duration(float64(i*len(line)) / float64(kibps<<10) * float64(time.Second)))
			time.Sleep(time.Until(due))
		}
	}
	fmt.Fprintf(w, "spewed %d MiB\n", mb)
}
