package fake

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// dial connects CRI clients to a unix socket.
func dial(t testing.TB, path string) (runtimeapi.RuntimeServiceClient, runtimeapi.ImageServiceClient) {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)
}

func TestGRPCEndToEnd(t *testing.T) {
	r, clk := newTest(t)
	path := filepath.Join(t.TempDir(), "cri.sock")
	stop, err := r.Start("unix://" + path)
	require.NoError(t, err)
	defer stop()
	rs, is := dial(t, path)
	ctx := context.Background()

	v, err := rs.Version(ctx, &runtimeapi.VersionRequest{})
	require.NoError(t, err)
	assert.Equal(t, "nodekit-fake", v.RuntimeName)

	img, err := is.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: spec(TestbinImage)})
	require.NoError(t, err)
	require.NotNil(t, img.Image)

	events, err := rs.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
	require.NoError(t, err)
	// The stream is registered once the server has handled the call;
	// a Version round trip after it does not guarantee that, so wait for
	// the first event below rather than assuming.

	pc := podConfig("e2e")
	sb, err := rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
	require.NoError(t, err)
	c, err := rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: sb.PodSandboxId, SandboxConfig: pc, Config: testbin("app", "exit", "5")})
	require.NoError(t, err)
	_, err = rs.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId})
	require.NoError(t, err)

	st, err := rs.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.ContainerId})
	require.NoError(t, err)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st.Status.State)
	assert.Equal(t, int32(5), st.Status.ExitCode)
	assert.Equal(t, "Error", st.Status.Reason)

	list, err := rs.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: sb.PodSandboxId}})
	require.NoError(t, err)
	require.Len(t, list.Containers, 1)

	_, err = rs.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: "nope"})
	requireCode(t, err, codes.NotFound, "not found")

	// Exec timeout over the wire, driven by the fake clock.
	exit, err := rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: sb.PodSandboxId, SandboxConfig: pc, Config: testbin("srv")})
	require.NoError(t, err)
	_, err = rs.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: exit.ContainerId})
	require.NoError(t, err)
	w := clk.Waiters()
	done := async(func() (*runtimeapi.ExecSyncResponse, error) {
		return rs.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: exit.ContainerId, Cmd: []string{"/testbin", "sleep", "9"}, Timeout: 1})
	})
	awaitWaiters(t, clk, w+1)
	clk.Step(time.Second)
	requireCode(t, <-done, codes.DeadlineExceeded, "timeout 1s exceeded")

	// Events arrive for whatever happened after the stream was registered;
	// make sure at least one more comes and that it is well formed.
	_, err = rs.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: c.ContainerId})
	require.NoError(t, err)
	ev, err := events.Recv()
	require.NoError(t, err)
	assert.NotEmpty(t, ev.ContainerId)
	assert.Equal(t, sb.PodSandboxId, ev.PodSandboxStatus.Id)

	// Injected errors travel as their status.
	r.InjectError("GetContainerEvents", status.Error(codes.Unimplemented, "unknown method GetContainerEvents for service runtime.v1.RuntimeService"), 1)
	s2, err := rs.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
	require.NoError(t, err)
	_, err = s2.Recv()
	requireCode(t, err, codes.Unimplemented, "")
}

func TestServeStopsGracefully(t *testing.T) {
	r, clk := newTest(t, WithBehavior(TestbinImage, BehaviorOf(Program{IgnoreSIGTERM: true})))
	path := filepath.Join(t.TempDir(), "cri.sock")
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- r.Serve(ctx, "unix://"+path) }()

	rs, _ := dial(t, path)
	// WaitForReady rides out the moment before Serve has created the
	// socket; the deadline only turns a hang into a failure.
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	_, err := rs.Version(wctx, &runtimeapi.VersionRequest{}, grpc.WaitForReady(true))
	require.NoError(t, err)

	// Calls blocked on the fake clock and an open event stream must not
	// keep the server from stopping.
	events, err := rs.GetContainerEvents(context.Background(), &runtimeapi.GetEventsRequest{})
	require.NoError(t, err)
	pc := podConfig("p")
	sb, err := rs.RunPodSandbox(context.Background(), &runtimeapi.RunPodSandboxRequest{Config: pc})
	require.NoError(t, err)
	c, err := rs.CreateContainer(context.Background(), &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, SandboxConfig: pc, Config: testbin("x")})
	require.NoError(t, err)
	_, err = rs.StartContainer(context.Background(), &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId})
	require.NoError(t, err)
	w := clk.Waiters()
	stopCall := async(func() (*runtimeapi.StopContainerResponse, error) {
		return rs.StopContainer(context.Background(), &runtimeapi.StopContainerRequest{ContainerId: c.ContainerId, Timeout: 3600})
	})
	awaitWaiters(t, clk, w+1)

	cancel()
	require.NoError(t, <-served)
	assert.Error(t, <-stopCall)
	for {
		if _, err := events.Recv(); err != nil {
			break
		}
	}
	_, err = os.Stat(path)
	assert.True(t, os.IsNotExist(err), "socket removed")
}

func TestListenEndpoints(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "stale.sock")
	l, err := net.Listen("unix", stale)
	require.NoError(t, err)
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, l.Close())
	busy := filepath.Join(dir, "busy.sock")
	bl, err := net.Listen("unix", busy)
	require.NoError(t, err)
	defer bl.Close()
	plain := filepath.Join(dir, "plain")
	require.NoError(t, os.WriteFile(plain, nil, 0o600))

	tests := []struct {
		name, endpoint, err string
	}{
		{"fresh in new dir", "unix://" + filepath.Join(dir, "sub", "new.sock"), ""},
		{"stale socket replaced", "unix://" + stale, ""},
		{"no scheme", filepath.Join(dir, "x.sock"), "want unix:///absolute/path.sock"},
		{"tcp", "tcp://127.0.0.1:1234", "want unix://"},
		{"relative", "unix://x.sock", "not absolute"},
		{"too long", "unix:///" + strings.Repeat("a", 200), "longer than"},
		{"busy", "unix://" + busy, "already listening"},
		{"not a socket", "unix://" + plain, "not a socket"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := listen(tt.endpoint)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.NoError(t, l.Close())
		})
	}
	r := New()
	defer r.Close()
	_, err = r.Start("nope")
	require.ErrorContains(t, err, "want unix://")
	require.ErrorContains(t, r.Serve(context.Background(), "nope"), "want unix://")
}

func TestRegister(t *testing.T) {
	r, _ := newTest(t)
	s := grpc.NewServer()
	r.Register(s)
	info := s.GetServiceInfo()
	assert.Contains(t, info, "runtime.v1.RuntimeService")
	assert.Contains(t, info, "runtime.v1.ImageService")
	s.Stop()
}
