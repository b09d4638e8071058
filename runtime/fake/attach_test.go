package fake

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit-dev/nodekit/internal/poll"
)

// awaitAttached waits until n clients are attached to container id.
func awaitAttached(t *testing.T, r *Runtime, id string, n int) {
	t.Helper()
	poll.Eventually(t, func() bool {
		r.mu.RLock()
		defer r.mu.RUnlock()
		return len(r.st.containers[id].attached) == n
	}, 10*time.Second, time.Millisecond, "%d clients attached to %s", n, id)
}

const printerImage = "nodekit.local/printer:1"

// printer runs containers that print what the test tells them to.
func printer(procs chan<- Proc) Option {
	return WithBehavior(printerImage, BehaviorOf(Program{Run: func(p Proc) func() {
		procs <- p
		return nil
	}}))
}

func TestStreamingAttach(t *testing.T) {
	for _, proto := range protocols {
		for _, tty := range []bool{false, true} {
			name := proto
			if tty {
				name += "/tty"
			}
			t.Run(name, func(t *testing.T) {
				procs := make(chan Proc, 1)
				r, _ := newTest(t, WithImages(printerImage), printer(procs))
				rs := criClient(t, r)
				cfg := &runtimeapi.ContainerConfig{
					Metadata: &runtimeapi.ContainerMetadata{Name: "p"},
					Image:    &runtimeapi.ImageSpec{Image: printerImage},
					Tty:      tty,
				}
				_, id := run(t, r, cfg)
				p := <-procs
				p.Print(Stdout, "before")

				resp, err := rs.Attach(context.Background(), &runtimeapi.AttachRequest{ContainerId: id, Stdout: true, Stderr: !tty, Tty: tty})
				require.NoError(t, err)
				done := make(chan session, 1)
				go func() { done <- stream(context.Background(), t, proto, resp.Url, nil, tty) }()
				awaitAttached(t, r, id, 1)
				p.Print(Stdout, "out")
				p.Print(Stderr, "err")
				p.Exit(0)

				s := <-done
				require.NoError(t, s.err)
				if tty {
					assert.Equal(t, "out\r\nerr\r\n", s.stdout, "a terminal is one stream")
				} else {
					assert.Equal(t, "out\n", s.stdout)
					assert.Equal(t, "err\n", s.stderr)
				}
			})
		}
	}
}

func TestStreamingAttachStdin(t *testing.T) {
	r, _ := newTest(t)
	rs := criClient(t, r)
	ctx := context.Background()
	attach := func(t *testing.T, id, input string) session {
		resp, err := rs.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: id, Stdin: true, Stdout: true, Stderr: true})
		require.NoError(t, err)
		return stream(ctx, t, "spdy", resp.Url, strings.NewReader(input), false)
	}

	t.Run("cat echoes until stdin closes", func(t *testing.T) {
		cfg := testbin("cat", "cat")
		cfg.Stdin, cfg.StdinOnce = true, true
		_, id := run(t, r, cfg)
		s := attach(t, id, "hello\nworld")
		require.NoError(t, s.err)
		assert.Equal(t, "hello\nworld\n", s.stdout)
		st := containerStatus(t, r, id)
		assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st.State)
		assert.Equal(t, int32(0), st.ExitCode)
	})
	t.Run("without stdinOnce the client detaches", func(t *testing.T) {
		cfg := testbin("cat-open", "cat")
		cfg.Stdin = true
		_, id := run(t, r, cfg)
		s := attach(t, id, "one\n")
		require.NoError(t, s.err)
		assert.Equal(t, "one\n", s.stdout)
		assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, containerStatus(t, r, id).State)
		s = attach(t, id, "two\n")
		assert.Equal(t, "two\n", s.stdout, "stdin is still open")
	})
	t.Run("without stdin cat ends at once", func(t *testing.T) {
		_, id := run(t, r, testbin("cat-null", "cat"))
		st := containerStatus(t, r, id)
		assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st.State)
		assert.Equal(t, int32(0), st.ExitCode)
	})
	t.Run("input to a container without stdin is ignored", func(t *testing.T) {
		_, id := run(t, r, testbin("web"))
		resp, err := rs.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: id, Stdin: true, Stdout: true, Stderr: true})
		require.NoError(t, err)
		done := make(chan session, 1)
		go func() { done <- stream(ctx, t, "spdy", resp.Url, strings.NewReader("ignored\n"), false) }()
		awaitAttached(t, r, id, 1)
		_, err = rs.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 10})
		require.NoError(t, err)
		s := <-done
		require.NoError(t, s.err)
		assert.Equal(t, "got terminated, exiting\n", s.stdout)
	})
}
