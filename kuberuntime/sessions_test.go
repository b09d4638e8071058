package kuberuntime_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/tools/remotecommand"
	clientexec "k8s.io/client-go/util/exec"

	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/streamtest"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

// sessionPod is a host-network pod with the test image serving HTTP on
// port in container "web" and echoing its stdin in container "cat".
func sessionPod(port int) *v1.Pod {
	grace := int64(2)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sessions", Namespace: "default", UID: types.UID("sessions-" + rand.String(8))},
		Spec: v1.PodSpec{HostNetwork: true, TerminationGracePeriodSeconds: &grace, Containers: []v1.Container{
			{Name: "web", Image: testImage, Args: []string{"serve"}, ImagePullPolicy: v1.PullNever,
				Env: []v1.EnvVar{{Name: "PORT", Value: strconv.Itoa(port)}}},
			{Name: "cat", Image: testImage, Args: []string{"cat"}, ImagePullPolicy: v1.PullNever, Stdin: true},
		}},
	}
}

// checkSessions runs the pod on m and drives real sessions (client-go's
// SPDY clients on the URLs the Manager returns) against the runtime's
// streaming server: exec with output, stdin and exit codes, attach,
// port-forward, RunInContainer, and the lookups' errors.
func checkSessions(t *testing.T, m *kuberuntime.Manager, syncOpts kuberuntime.SyncOptions) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	port := freeLoopbackPort(t)
	pod := sessionPod(port)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		assert.NoError(t, m.RemovePod(ctx, pod.UID))
	})
	poll.Eventually(t, func() bool {
		st, err := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		require.NoError(t, err)
		m.SyncPod(ctx, pod, st, syncOpts)
		st, err = m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		require.NoError(t, err)
		return len(st.RunningContainers()) == 2
	}, 30*time.Second, 200*time.Millisecond, "both containers running")

	exec := func(container string, cmd []string, stdin io.Reader, tty bool) (string, string, error) {
		u, err := m.GetExec(ctx, pod.UID, container, cmd, kc.StreamOptions{Stdin: stdin != nil, Stdout: true, Stderr: !tty, TTY: tty})
		require.NoError(t, err)
		return stream(ctx, t, u.String(), stdin, tty)
	}
	out, errOut, err := exec("web", []string{"/testbin", "echo", "hello", "exec"}, nil, false)
	require.NoError(t, err)
	assert.Equal(t, "hello exec\n", out)
	assert.Empty(t, errOut)
	_, errOut, err = exec("web", []string{"/testbin", "stderr", "to stderr"}, nil, false)
	require.NoError(t, err)
	assert.Equal(t, "to stderr\n", errOut)
	out, _, err = exec("web", []string{"/testbin", "cat"}, strings.NewReader("through stdin\n"), false)
	require.NoError(t, err)
	assert.Equal(t, "through stdin\n", out)
	// A terminal's stdin stays open, as kubectl exec -it's: an early EOF
	// would hang the terminal up before the output is read.
	ttyIn, ttyInW := io.Pipe()
	out, _, err = exec("web", []string{"/testbin", "tty"}, ttyIn, true)
	_ = ttyInW.Close()
	require.NoError(t, err)
	assert.Contains(t, out, "/dev/pts/", "a terminal")
	_, _, err = exec("web", []string{"/testbin", "exit", "3"}, nil, false)
	var exit clientexec.CodeExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 3, exit.Code, "the exit code reaches the client")

	// Attach: what goes to the process's stdin comes back on its stdout
	// (and into its log); the session lasts until the client goes.
	u, err := m.GetAttach(ctx, pod.UID, "cat", kc.StreamOptions{Stdin: true, Stdout: true, Stderr: true})
	require.NoError(t, err)
	// The echo is read as it comes: the session ends only once it came
	// back, not when the log has it (the two race).
	ex, err := streamtest.Executor(nil, u.String(), false)
	require.NoError(t, err)
	attachCtx, endAttach := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	var attachedOut, attachedErr streamtest.Buffer
	ended := make(chan error, 1)
	go func() {
		ended <- ex.StreamWithContext(attachCtx, remotecommand.StreamOptions{Stdin: pr, Stdout: &attachedOut, Stderr: &attachedErr})
	}()
	_, err = pw.Write([]byte("through attach\n"))
	require.NoError(t, err)
	poll.Eventually(t, func() bool { return containerLogHas(ctx, t, m, pod, "cat", "through attach") },
		20*time.Second, 100*time.Millisecond, "the attached line reached the process (its log)")
	poll.Eventually(t, func() bool { return strings.Contains(attachedOut.String(), "through attach") },
		20*time.Second, 10*time.Millisecond, "and came back on the attached stdout")
	endAttach()
	_ = pw.Close()
	select {
	case <-ended:
	case <-time.After(20 * time.Second):
		t.Fatal("attach did not end with its client")
	}

	// Port-forward to the web container's port.
	u, err = m.GetPortForward(ctx, pod.UID, nil)
	require.NoError(t, err)
	assert.Equal(t, "ready", forwardGet(t, u.String(), port, "/readyz"))

	// RunInContainer: stdout then stderr, and the exit as an error.
	got, err := m.RunInContainer(ctx, pod.UID, "web", []string{"/testbin", "echo", "run"}, 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "run\n", string(got))
	_, err = m.RunInContainer(ctx, pod.UID, "web", []string{"/testbin", "exit", "4"}, 5*time.Second)
	assert.ErrorContains(t, err, "exit code 4")

	// The lookups' errors, for the node API's 404s.
	_, err = m.GetExec(ctx, pod.UID, "nope", []string{"/testbin"}, kc.StreamOptions{Stdout: true})
	assert.ErrorIs(t, err, kc.ErrContainerNotFound)
	_, err = m.GetExec(ctx, "no-such-uid", "web", []string{"/testbin"}, kc.StreamOptions{Stdout: true})
	assert.ErrorIs(t, err, kc.ErrPodNotFound)
	_, err = m.GetPortForward(ctx, "no-such-uid", nil)
	assert.ErrorIs(t, err, kc.ErrPodNotFound)
}

// stream runs a session on a runtime's URL with client-go's SPDY client.
func stream(ctx context.Context, t *testing.T, rawURL string, stdin io.Reader, tty bool) (string, string, error) {
	s, err := streamtest.Stream(ctx, nil, rawURL, false, stdin, tty)
	require.NoError(t, err)
	return s.Stdout, s.Stderr, s.Err
}

// forwardGet GETs path through a port-forward to port and returns the body.
func forwardGet(t *testing.T, rawURL string, port int, path string) string {
	local, stop, err := streamtest.Forward(nil, rawURL, port)
	require.NoError(t, err)
	defer func() { assert.NoError(t, stop()) }()
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(fmt.Sprintf("http://127.0.0.1:%d%s", local, path))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return strings.TrimSpace(string(body))
}

func freeLoopbackPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// containerLogHas reports whether the container's CRI log has text.
func containerLogHas(ctx context.Context, t *testing.T, m *kuberuntime.Manager, pod *v1.Pod, container, text string) bool {
	path, err := m.ContainerLogPath(ctx, pod.UID, pod.Name, pod.Namespace, container, false)
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(b), text)
}

// TestSessionsOnFake: the same sessions through the fake runtime's
// streaming server (k8s.io/cri-streaming, as containerd's), over real
// gRPC and real SPDY on loopback.
func TestSessionsOnFake(t *testing.T) {
	_, client := startFake(t, fake.WithHostPorts(true))
	m, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: client, Streaming: client, PodLogsDir: t.TempDir()})
	require.NoError(t, err)
	checkSessions(t, m, kuberuntime.SyncOptions{})
}
