package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientexec "k8s.io/client-go/util/exec"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming"
	remotecommandserver "k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"

	"github.com/nodekit-dev/nodekit/internal/streamtest"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/server"
)

// streamBackend is a runtime's streaming server on loopback (cri-streaming,
// as containerd's) over a tiny runtime: "echo ARGS", "cat", "exit N";
// attach says hello and echoes stdin; port-forward reaches echoAddr.
type streamBackend struct {
	srv      streaming.Server
	echoAddr string
	mu       sync.Mutex
	calls    []string // the Get calls: "exec uid/container [cmd]"
}

func newStreamBackend(t *testing.T) *streamBackend {
	t.Helper()
	b := &streamBackend{}
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	b.echoAddr = echo.Addr().String()
	var conns sync.WaitGroup
	var open []net.Conn
	conns.Add(1)
	go func() {
		defer conns.Done()
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			open = append(open, c)
			b.mu.Unlock()
			conns.Add(1)
			go func() { defer conns.Done(); _, _ = io.Copy(c, c) }()
		}
	}()
	ts := httptest.NewUnstartedServer(nil)
	cfg := streaming.DefaultConfig
	cfg.Addr = ts.Listener.Addr().String()
	cfg.BaseURL = &url.URL{Scheme: "http", Host: cfg.Addr}
	b.srv, err = streaming.NewServer(cfg, b)
	require.NoError(t, err)
	ts.Config.Handler = b.srv
	ts.Start()
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		_ = echo.Close()
		b.mu.Lock()
		for _, c := range open {
			_ = c.Close()
		}
		b.mu.Unlock()
		conns.Wait()
	})
	return b
}

func (b *streamBackend) Exec(_ context.Context, id string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, _ <-chan remotecommandserver.TerminalSize) error {
	switch cmd[0] {
	case "echo":
		_, err := fmt.Fprintln(out, strings.Join(cmd[1:], " "))
		return err
	case "stderr":
		_, err := fmt.Fprintln(errw, strings.Join(cmd[1:], " "))
		return err
	case "cat":
		_, err := io.Copy(out, in)
		return err
	case "exit":
		n, _ := strconv.Atoi(cmd[1])
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", n), Code: n}
	}
	return fmt.Errorf("%s: executable file not found in $PATH", cmd[0])
}

func (b *streamBackend) Attach(_ context.Context, id string, in io.Reader, out, _ io.WriteCloser, tty bool, _ <-chan remotecommandserver.TerminalSize) error {
	if _, err := fmt.Fprintf(out, "attached to %s tty=%v\n", id, tty); err != nil {
		return err
	}
	if in != nil {
		_, err := io.Copy(out, in)
		return err
	}
	return nil
}

func (b *streamBackend) PortForward(_ context.Context, sandbox string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	c, err := net.Dial("tcp", b.echoAddr)
	if err != nil {
		return err
	}
	defer c.Close()
	go func() { _, _ = io.Copy(c, stream) }()
	_, err = io.Copy(stream, c)
	return err
}

func (b *streamBackend) record(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, s)
}

// The server.Streamer side: what kuberuntime.Manager does, minus the lookup.
func (b *streamBackend) GetExec(_ context.Context, uid types.UID, c string, cmd []string, o kc.StreamOptions) (*url.URL, error) {
	if c == "gone" {
		return nil, fmt.Errorf("%w: no running container %q", kc.ErrContainerNotFound, c)
	}
	b.record(fmt.Sprintf("exec %s/%s %v", uid, c, cmd))
	r, err := b.srv.GetExec(&runtimeapi.ExecRequest{ContainerId: string(uid) + "/" + c, Cmd: cmd,
		Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr, Tty: o.TTY})
	if err != nil {
		return nil, err
	}
	return url.Parse(r.Url)
}

func (b *streamBackend) GetAttach(_ context.Context, uid types.UID, c string, o kc.StreamOptions) (*url.URL, error) {
	b.record(fmt.Sprintf("attach %s/%s tty=%v", uid, c, o.TTY))
	r, err := b.srv.GetAttach(&runtimeapi.AttachRequest{ContainerId: string(uid) + "/" + c,
		Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr, Tty: o.TTY})
	if err != nil {
		return nil, err
	}
	return url.Parse(r.Url)
}

func (b *streamBackend) GetPortForward(_ context.Context, uid types.UID, ports []int32) (*url.URL, error) {
	b.record(fmt.Sprintf("portforward %s %v", uid, ports))
	r, err := b.srv.GetPortForward(&runtimeapi.PortForwardRequest{PodSandboxId: string(uid), Port: ports})
	if err != nil {
		return nil, err
	}
	return url.Parse(r.Url)
}

func (b *streamBackend) RunInContainer(_ context.Context, uid types.UID, c string, cmd []string, _ time.Duration) ([]byte, error) {
	b.record(fmt.Sprintf("run %s/%s %v", uid, c, cmd))
	if cmd[0] == "fail" {
		return []byte("partial"), errors.New("command terminated with non-zero exit code 1")
	}
	return []byte(strings.Join(cmd, "+")), nil
}

type podList []v1.Pod

func (l podList) Pods() []v1.Pod { return l }

var streamPods = podList{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "u1"},
	Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}, {Name: "t", TTY: true, Stdin: true}}}}}

// streamServer serves the node API with streams over b on loopback.
func streamServer(t *testing.T, b *streamBackend) *httptest.Server {
	t.Helper()
	h := mustNew(t, server.Config{Pods: streamPods, Streams: b})
	ts := httptest.NewServer(h)
	t.Cleanup(func() { ts.CloseClientConnections(); ts.Close() })
	return ts
}

// execute runs a session on the node API at base+path with client-go's
// SPDY client, as the API server does toward a node.
func execute(t *testing.T, base, path string, stdin io.Reader, tty bool) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := streamtest.Stream(ctx, nil, base+path, false, stdin, tty)
	require.NoError(t, err)
	return s.Stdout, s.Stderr, s.Err
}

func TestExecAndAttachAreProxiedToTheRuntime(t *testing.T) {
	b := newStreamBackend(t)
	ts := streamServer(t, b)
	// SPDY only, as for the kubelet: the API server translates kubectl's
	// WebSocket (v5.channel.k8s.io) sessions to SPDY toward the node.
	out, errOut, err := execute(t, ts.URL, "/exec/default/web/c?command=echo&command=hello+world&output=1&error=1", nil, false)
	require.NoError(t, err)
	assert.Equal(t, "hello world\n", out)
	assert.Empty(t, errOut)

	_, errOut, err = execute(t, ts.URL, "/exec/default/web/u1/c?command=stderr&command=oops&output=1&error=1", nil, false)
	require.NoError(t, err)
	assert.Equal(t, "oops\n", errOut)

	out, _, err = execute(t, ts.URL, "/exec/default/web/c?command=cat&input=1&output=1&error=1", strings.NewReader("typed\n"), false)
	require.NoError(t, err)
	assert.Equal(t, "typed\n", out)

	_, _, err = execute(t, ts.URL, "/exec/default/web/c?command=exit&command=3&output=1&error=1", nil, false)
	var exit clientexec.CodeExitError
	require.ErrorAs(t, err, &exit, "the exit code reaches the client")
	assert.Equal(t, 3, exit.Code)

	// Attach takes the terminal setting from the container spec.
	out, _, err = execute(t, ts.URL, "/attach/default/web/t?input=1&output=1&tty=1", strings.NewReader("in\n"), true)
	require.NoError(t, err)
	assert.Equal(t, "attached to u1/t tty=true\nin\n", out)
	assert.Contains(t, b.calls, "exec u1/c [exit 3]")
	assert.Contains(t, b.calls, "attach u1/t tty=true")
}

func TestPortForwardIsProxiedToTheRuntime(t *testing.T) {
	b := newStreamBackend(t)
	ts := streamServer(t, b)
	local, stop, err := streamtest.Forward(nil, ts.URL+"/portForward/default/web", 8080)
	require.NoError(t, err)
	defer func() { require.NoError(t, stop()) }()
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(local)))
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("ping"))
	require.NoError(t, err)
	got := make([]byte, 4)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Second)))
	_, err = io.ReadFull(c, got)
	require.NoError(t, err)
	assert.Equal(t, "ping", string(got), "the bytes went through the runtime's port-forward and back")
	assert.Contains(t, b.calls, "portforward u1 []")
}

func TestBadStreamingRequestsGetClearErrors(t *testing.T) {
	b := newStreamBackend(t)
	h := mustNew(t, server.Config{Pods: streamPods, Streams: b})
	upgrade := http.Header{"Connection": {"Upgrade"}, "Upgrade": {"SPDY/3.1"}}
	for _, tc := range []struct {
		method, url string
		header      http.Header
		code        int
		body        string
	}{
		{"POST", "/exec/default/web/c?command=echo&output=1", nil, 400, "Upgrade request required"},
		{"POST", "/exec/default/web?command=echo&output=1", upgrade, 400, "must be /exec/<namespace>/<pod>[/<uid>]/<container>"},
		{"POST", "/exec/default/web/u1/c/extra?command=echo&output=1", upgrade, 400, "must be /exec/"},
		{"POST", "/exec/default/web/c?command=echo", upgrade, 400, "you must specify at least 1 of stdin, stdout, stderr"},
		{"POST", "/exec/default/web/c?output=1", upgrade, 400, "command: Required value"},
		{"POST", "/exec/default/nope/c?command=echo&output=1", upgrade, 404, "pod default/nope does not exist on this node"},
		{"POST", "/exec/default/web/other-uid/c?command=echo&output=1", upgrade, 404, "has UID u1, not other-uid"},
		{"POST", "/exec/default/web/gone?command=echo&output=1", upgrade, 404, `no running container "gone"`},
		{"DELETE", "/exec/default/web/c?command=echo&output=1", upgrade, 405, "method DELETE not allowed"},
		{"POST", "/attach/default/web/nope?output=1", upgrade, 404, `has no container "nope"`},
		{"GET", "/portForward/default/web", nil, 400, "Upgrade request required"},
		{"GET", "/portForward/default/web?port=0", http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}}, 400, "must be > 0"},
		{"GET", "/portForward/default/web?port=http", http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}}, 400, "unable to parse"},
		{"GET", "/portForward/default", upgrade, 400, "must be /portForward/<namespace>/<pod>[/<uid>]"},
		{"GET", "/run/default/web/c?cmd=ls", nil, 405, "use POST"},
		{"POST", "/run/default/web/c", nil, 400, "cmd: Required value"},
		{"POST", "/run/default/nope/c?cmd=ls", nil, 404, "does not exist"},
		{"POST", "/run/default/web/c?cmd=fail", nil, 500, "non-zero exit code 1"},
	} {
		t.Run(tc.method+" "+tc.url, func(t *testing.T) {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(tc.method, tc.url, nil)
			for k, v := range tc.header {
				req.Header[k] = v
			}
			h.ServeHTTP(rec, req)
			assert.Equal(t, tc.code, rec.Code, rec.Body.String())
			assert.Contains(t, rec.Body.String(), tc.body)
		})
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/run/default/web/u1/c?cmd=echo+a++b", nil))
	assert.Equal(t, 200, rec.Code)
	assert.Equal(t, "echo+a+b", rec.Body.String(), "cmd is split on spaces")
	assert.NotContains(t, strings.Join(b.calls, ","), "exec u1/c [echo]", "no runtime session for a refused request")
}

func TestStreamsNeedPods(t *testing.T) {
	_, err := server.New(server.Config{Streams: &streamBackend{}})
	require.ErrorContains(t, err, "Config.Streams needs Config.Pods")
}

// fixedURLStreams answers every session with one URL.
type fixedURLStreams struct{ u *url.URL }

func (s fixedURLStreams) GetExec(context.Context, types.UID, string, []string, kc.StreamOptions) (*url.URL, error) {
	return s.u, nil
}
func (s fixedURLStreams) GetAttach(context.Context, types.UID, string, kc.StreamOptions) (*url.URL, error) {
	return s.u, nil
}
func (s fixedURLStreams) GetPortForward(context.Context, types.UID, []int32) (*url.URL, error) {
	return s.u, nil
}
func (fixedURLStreams) RunInContainer(context.Context, types.UID, string, []string, time.Duration) ([]byte, error) {
	return nil, nil
}

// TestRuntimeStreamingAnswersArePassedBack: what the runtime's streaming
// server answers instead of upgrading reaches the client, with the
// session's path and the request's query and without its credentials;
// a runtime that cannot be reached is a 502 saying so.
func TestRuntimeStreamingAnswersArePassedBack(t *testing.T) {
	var got *http.Request
	runtimeSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		http.Error(w, "session token expired", http.StatusNotFound)
	}))
	t.Cleanup(runtimeSrv.Close)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for _, tc := range []struct {
		name, runtimeURL string
		code             int
		body             string
	}{
		{"runtime answers", runtimeSrv.URL + "/exec/tok3n", http.StatusNotFound, "session token expired"},
		{"runtime unreachable", closed.URL + "/exec/tok3n", http.StatusBadGateway, "proxying to the runtime's streaming server: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := url.Parse(tc.runtimeURL)
			require.NoError(t, err)
			h := mustNew(t, server.Config{Pods: streamPods, Streams: fixedURLStreams{u}})
			req := httptest.NewRequest("POST", "/exec/default/web/c?command=echo&output=1", nil)
			req.Header.Set("Connection", "Upgrade")
			req.Header.Set("Upgrade", "SPDY/3.1")
			req.Header.Set("Authorization", "Bearer secret")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			assert.Equal(t, tc.code, rec.Code, rec.Body.String())
			assert.Contains(t, rec.Body.String(), tc.body)
		})
	}
	require.NotNil(t, got)
	assert.Equal(t, "/exec/tok3n", got.URL.Path)
	assert.Equal(t, "command=echo&output=1", got.URL.RawQuery)
	assert.Empty(t, got.Header.Get("Authorization"))
	assert.Equal(t, "SPDY/3.1", got.Header.Get("Upgrade"))
}
