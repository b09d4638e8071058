package fake

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestExecSync(t *testing.T) {
	tests := []struct {
		name     string
		cmd      []string
		stdout   string
		stderr   string
		code     int32
		errCode  codes.Code
		contains string
	}{
		{name: "echo", cmd: []string{"/testbin", "echo", "a", "b"}, stdout: "a b\n"},
		{name: "echo nothing", cmd: []string{"/testbin", "echo"}, stdout: "\n"},
		{name: "exit", cmd: []string{"/testbin", "exit", "4"}, stdout: "exiting with 4\n", code: 4},
		{name: "stderr", cmd: []string{"/testbin", "stderr", "bad", "thing"}, stderr: "bad thing\n"},
		{name: "hostname", cmd: []string{"/testbin", "hostname"}, stdout: "pod-app\n"},
		{name: "unknown mode", cmd: []string{"/testbin", "nope"}, stderr: "testbin: unknown mode \"nope\"\n", code: 2},
		{name: "cat without stdin", cmd: []string{"/testbin", "cat"}},
		{name: "tty without terminal", cmd: []string{"/testbin", "tty"}, stdout: "not a tty\n", code: 1},
		{name: "not in PATH", cmd: []string{"sh", "-c", "true"}, errCode: codes.Unknown,
			contains: `OCI runtime exec failed: exec failed: unable to start container process: exec: "sh": executable file not found in $PATH: unknown`},
		{name: "empty", cmd: nil, errCode: codes.Unknown, contains: "args must not be empty"},
		{name: "absolute path", cmd: []string{"/bin/cat"}, errCode: codes.Unknown, contains: `stat /bin/cat: no such file or directory`},
	}
	r, _ := newTest(t)
	_, id := run(t, r, testbin("app"))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := r.ExecSync(context.Background(), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: tt.cmd})
			if tt.errCode != codes.OK {
				requireCode(t, err, tt.errCode, tt.contains)
				assert.Contains(t, err.Error(), "failed to exec in container: failed to start exec")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.stdout, string(resp.Stdout))
			assert.Equal(t, tt.stderr, string(resp.Stderr))
			assert.Equal(t, tt.code, resp.ExitCode)
		})
	}
}

func TestExecSyncTimeouts(t *testing.T) {
	r, clk := newTest(t)
	_, id := run(t, r, testbin("app"))
	exec := func(timeout int64, cmd ...string) <-chan error {
		return async(func() (*runtimeapi.ExecSyncResponse, error) {
			return r.ExecSync(context.Background(), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: timeout})
		})
	}

	t.Run("exceeds timeout", func(t *testing.T) {
		w := clk.Waiters()
		done := exec(1, "/testbin", "sleep", "5")
		awaitWaiters(t, clk, w+1)
		clk.Step(time.Second)
		requireCode(t, <-done, codes.DeadlineExceeded, "timeout 1s exceeded")
	})
	t.Run("never ends", func(t *testing.T) {
		w := clk.Waiters()
		done := exec(2, "/testbin", "sleep")
		awaitWaiters(t, clk, w+1)
		clk.Step(2 * time.Second)
		requireCode(t, <-done, codes.DeadlineExceeded, "timeout 2s exceeded")
	})
	t.Run("within timeout", func(t *testing.T) {
		w := clk.Waiters()
		done := exec(5, "/testbin", "sleep", "2")
		awaitWaiters(t, clk, w+1)
		clk.Step(2 * time.Second)
		require.NoError(t, <-done)
	})
	t.Run("no timeout waits for the command", func(t *testing.T) {
		w := clk.Waiters()
		done := exec(0, "/testbin", "sleep", "30")
		awaitWaiters(t, clk, w+1)
		clk.Step(30 * time.Second)
		require.NoError(t, <-done)
	})
	t.Run("caller gives up", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := async(func() (*runtimeapi.ExecSyncResponse, error) {
			return r.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"/testbin", "serve"}})
		})
		cancel()
		requireCode(t, <-done, codes.Canceled, "")
	})
}

func TestExecSyncStates(t *testing.T) {
	r, _ := newTest(t, WithImages("busybox"))
	ctx := context.Background()
	pc := podConfig("p")
	sb := runPod(t, r, pc)
	created := create(t, r, sb, pc, testbin("c"))
	_, err := r.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: created, Cmd: []string{"/testbin", "echo"}})
	requireCode(t, err, codes.Unknown, "failed to exec in container: container is in CONTAINER_CREATED state")

	exited := create(t, r, sb, pc, testbin("e", "exit", "1"))
	start(t, r, exited)
	_, err = r.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: exited, Cmd: []string{"/testbin", "echo"}})
	requireCode(t, err, codes.Unknown, "container is in CONTAINER_EXITED state")

	_, err = r.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: "nope", Cmd: []string{"ls"}})
	requireCode(t, err, codes.NotFound, `failed to find container "nope"`)

	// Images without a behaviour have no binaries.
	bb := create(t, r, sb, pc, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "bb"}, Image: &runtimeapi.ImageSpec{Image: "busybox"}})
	start(t, r, bb)
	_, err = r.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: bb, Cmd: []string{"ls"}})
	requireCode(t, err, codes.Unknown, "executable file not found")
}
