package fake

import (
	"context"
	"errors"
	"io"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"k8s.io/client-go/tools/remotecommand"
	clientexec "k8s.io/client-go/util/exec"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/streamtest"
)

// criClient serves r over gRPC, the way users reach the streaming calls.
func criClient(t *testing.T, r *Runtime) runtimeapi.RuntimeServiceClient {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cri.sock")
	stop, err := r.Start("unix://" + path)
	require.NoError(t, err)
	t.Cleanup(stop)
	rs, _ := dial(t, path)
	return rs
}

// protocols are the ways kubectl-like clients stream: SPDY, and WebSocket
// with v4 (client-go's default v5 is spoken by the API server only, which
// translates it to SPDY for the kubelet and the runtime).
var protocols = []string{"spdy", "websocket"}

// executor connects a remotecommand client to a streaming URL on loopback.
func executor(t *testing.T, proto, rawURL string) remotecommand.Executor {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", u.Hostname(), "streaming server on loopback")
	require.NotEqual(t, "0", u.Port())
	ex, err := streamtest.Executor(nil, rawURL, proto == "websocket")
	require.NoError(t, err)
	return ex
}

// session is what a client saw of an exec or attach.
type session struct {
	stdout, stderr string
	err            error
}

// stream runs an exec or attach session from its URL; stdin may be nil.
func stream(ctx context.Context, t *testing.T, proto, rawURL string, stdin io.Reader, tty bool) session {
	t.Helper()
	executor(t, proto, rawURL) // the URL's checks
	s, err := streamtest.Stream(ctx, nil, rawURL, proto == "websocket", stdin, tty)
	require.NoError(t, err)
	return session{stdout: s.Stdout, stderr: s.Stderr, err: s.Err}
}

func execURL(t *testing.T, rs runtimeapi.RuntimeServiceClient, id string, cmd []string, stdin, tty bool) string {
	t.Helper()
	resp, err := rs.Exec(context.Background(), &runtimeapi.ExecRequest{
		ContainerId: id, Cmd: cmd, Stdin: stdin, Stdout: true, Stderr: !tty, Tty: tty})
	require.NoError(t, err)
	return resp.Url
}

func exitCodeOf(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	var ce clientexec.CodeExitError
	require.True(t, errors.As(err, &ce), "want an exit code, got %v", err)
	return ce.Code
}

func TestStreamingExec(t *testing.T) {
	tests := []struct {
		name           string
		cmd            []string
		stdin          string // "" sends none
		tty            bool
		spdyOnly       bool // WebSocket v4 cannot end stdin
		stdout, stderr string
		code           int
	}{
		{name: "echo", cmd: []string{"/testbin", "echo", "hi"}, stdout: "hi\n"},
		{name: "stderr apart", cmd: []string{"/testbin", "stderr", "oops"}, stderr: "oops\n"},
		{name: "exit code", cmd: []string{"/testbin", "exit", "3"}, stdout: "exiting with 3\n", code: 3},
		{name: "unknown mode", cmd: []string{"/testbin", "nope"}, stderr: "testbin: unknown mode \"nope\"\n", code: 2},
		{name: "not a tty", cmd: []string{"/testbin", "tty"}, stdout: "not a tty\n", code: 1},
		{name: "tty", cmd: []string{"/testbin", "tty"}, tty: true, stdout: "/dev/pts/0\r\n"},
		{name: "tty merges stderr", cmd: []string{"/testbin", "stderr", "a", "b"}, tty: true, stdout: "a b\r\n"},
		{name: "cat echoes stdin", cmd: []string{"/testbin", "cat"}, stdin: "a\nb\n", spdyOnly: true, stdout: "a\nb\n"},
		// The terminal echoes the input, then cat prints it.
		{name: "cat on a tty", cmd: []string{"/testbin", "cat"}, stdin: "hi\n", tty: true, spdyOnly: true, stdout: "hi\r\nhi\r\n"},
		{name: "input ignored", cmd: []string{"/testbin", "echo", "x"}, stdin: "unread\n", spdyOnly: true, stdout: "x\n"},
	}
	r, _ := newTest(t)
	rs := criClient(t, r)
	_, id := run(t, r, testbin("app"))
	for _, proto := range protocols {
		for _, tt := range tests {
			if tt.spdyOnly && proto != "spdy" {
				continue
			}
			t.Run(proto+"/"+tt.name, func(t *testing.T) {
				var stdin io.Reader
				if tt.stdin != "" {
					stdin = strings.NewReader(tt.stdin)
				}
				u := execURL(t, rs, id, tt.cmd, stdin != nil, tt.tty)
				s := stream(context.Background(), t, proto, u, stdin, tt.tty)
				assert.Equal(t, tt.code, exitCodeOf(t, s.err))
				assert.Equal(t, tt.stdout, s.stdout)
				assert.Equal(t, tt.stderr, s.stderr)
			})
		}
	}
}

func TestStreamingExecFails(t *testing.T) {
	r, _ := newTest(t)
	rs := criClient(t, r)
	_, id := run(t, r, testbin("app"))
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			s := stream(context.Background(), t, proto, execURL(t, rs, id, []string{"sh", "-c", "true"}, false, false), nil, false)
			require.Error(t, s.err)
			var ce clientexec.CodeExitError
			assert.False(t, errors.As(s.err, &ce), "a start failure has no exit code: %v", s.err)
			assert.Contains(t, s.err.Error(), `failed to start exec`)
			assert.Contains(t, s.err.Error(), `exec: "sh": executable file not found in $PATH`)
		})
	}
}

func TestStreamingRefused(t *testing.T) {
	r, _ := newTest(t)
	rs := criClient(t, r)
	ctx := context.Background()
	pc := podConfig("p")
	sb := runPod(t, r, pc)
	exited := create(t, r, sb, pc, testbin("e", "exit", "1"))
	start(t, r, exited)
	running := create(t, r, sb, pc, testbin("r"))
	start(t, r, running)

	tests := []struct {
		name     string
		call     func() error
		code     codes.Code
		contains string
	}{
		{"exec unknown", func() error {
			_, err := rs.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: "nope", Cmd: []string{"ls"}, Stdout: true})
			return err
		}, codes.NotFound, `failed to find container "nope" in store: not found`},
		{"exec exited", func() error {
			_, err := rs.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: exited, Cmd: []string{"ls"}, Stdout: true})
			return err
		}, codes.Unknown, "container is in CONTAINER_EXITED state"},
		{"exec tty with stderr", func() error {
			_, err := rs.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: running, Cmd: []string{"ls"}, Stderr: true, Tty: true})
			return err
		}, codes.InvalidArgument, "tty and stderr cannot both be true"},
		{"attach unknown", func() error {
			_, err := rs.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: "nope", Stdout: true})
			return err
		}, codes.NotFound, "failed to find container in store: not found"},
		{"attach exited", func() error {
			_, err := rs.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: exited, Stdout: true})
			return err
		}, codes.Unknown, "container is in CONTAINER_EXITED state"},
		{"port-forward unknown", func() error {
			_, err := rs.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: "nope", Port: []int32{80}})
			return err
		}, codes.NotFound, `failed to find sandbox "nope": not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireCode(t, tt.call(), tt.code, tt.contains)
		})
	}

	_, err := rs.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb})
	require.NoError(t, err)
	_, err = rs.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: sb, Port: []int32{80}})
	requireCode(t, err, codes.Unknown, "sandbox container is not running")
	assert.Equal(t, 3, r.Calls("Exec"))
}

func TestStreamingExecEnds(t *testing.T) {
	r, clk := newTest(t)
	rs := criClient(t, r)
	_, id := run(t, r, testbin("app"))

	t.Run("after its duration on the clock", func(t *testing.T) {
		u := execURL(t, rs, id, []string{"/testbin", "sleep", "5"}, false, false)
		w := clk.Waiters()
		done := make(chan session, 1)
		go func() { done <- stream(context.Background(), t, "spdy", u, nil, false) }()
		awaitWaiters(t, clk, w+1)
		clk.Step(5 * time.Second)
		require.NoError(t, (<-done).err)
	})
	// A long sleep arms a timer on the clock once the exec runs.
	running := func(t *testing.T, ctx context.Context) <-chan session {
		u := execURL(t, rs, id, []string{"/testbin", "sleep", "1000"}, false, false)
		w := clk.Waiters()
		done := make(chan session, 1)
		go func() { done <- stream(ctx, t, "spdy", u, nil, false) }()
		awaitWaiters(t, clk, w+1)
		return done
	}
	t.Run("when the client goes away", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := running(t, ctx)
		cancel()
		require.Error(t, (<-done).err)
		awaitSessions(t, r, 0)
	})
	t.Run("killed with its container", func(t *testing.T) {
		done := running(t, context.Background())
		require.NoError(t, r.Exit(id, 0))
		assert.Equal(t, 137, exitCodeOf(t, (<-done).err))
	})
}

// awaitSessions waits until the streaming server has n connections.
func awaitSessions(t *testing.T, r *Runtime, n int) {
	t.Helper()
	poll.Eventually(t, func() bool {
		r.streamMu.Lock()
		s := r.stream
		r.streamMu.Unlock()
		return s != nil && len(s.openConns()) == n
	}, 10*time.Second, time.Millisecond, "%d streaming connections", n)
}

func TestStreamingCloseEndsSessions(t *testing.T) {
	r, clk := newTest(t)
	rs := criClient(t, r)
	_, id := run(t, r, testbin("app"))
	execDone := make(chan session, 1)
	u := execURL(t, rs, id, []string{"/testbin", "sleep", "1000"}, false, false)
	w := clk.Waiters()
	go func() { execDone <- stream(context.Background(), t, "spdy", u, nil, false) }()
	awaitWaiters(t, clk, w+1)
	resp, err := rs.Attach(context.Background(), &runtimeapi.AttachRequest{ContainerId: id, Stdout: true, Stderr: true})
	require.NoError(t, err)
	attachDone := make(chan session, 1)
	go func() { attachDone <- stream(context.Background(), t, "spdy", resp.Url, nil, false) }()
	awaitAttached(t, r, id, 1)
	awaitSessions(t, r, 2)

	require.NoError(t, r.Close())
	for _, done := range []<-chan session{execDone, attachDone} {
		s := <-done
		require.Error(t, s.err)
		assert.Contains(t, s.err.Error(), "fake runtime is closed", "the client hears why")
	}
	_, err = rs.Exec(context.Background(), &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"ls"}, Stdout: true})
	requireCode(t, err, codes.Unavailable, "")
}

func TestStreamingCloseEndsExecReadingStdin(t *testing.T) {
	r, _ := newTest(t)
	rs := criClient(t, r)
	_, id := run(t, r, testbin("app"))
	u := execURL(t, rs, id, []string{"/testbin", "cat"}, true, false)
	stdin, typing := io.Pipe()
	defer typing.Close()
	var out streamtest.Buffer
	done := make(chan error, 1)
	go func() {
		done <- executor(t, "spdy", u).StreamWithContext(context.Background(),
			remotecommand.StreamOptions{Stdin: stdin, Stdout: &out, Stderr: io.Discard})
	}()
	_, err := typing.Write([]byte("x\n"))
	require.NoError(t, err)
	poll.Eventually(t, func() bool { return out.String() == "x\n" }, 10*time.Second, time.Millisecond,
		"cat runs, waiting for more input")

	require.NoError(t, r.Close())
	err = <-done
	require.Error(t, err)
	assert.Contains(t, err.Error(), "fake runtime is closed")
}
