package fake

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/internal/poll"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// epoch is the fake clock's start; a fixed instant keeps logs comparable.
var epoch = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// newTest returns a Runtime on a fake clock with the project's images.
func newTest(t *testing.T, opts ...Option) (*Runtime, *testingclock.FakeClock) {
	t.Helper()
	clk := testingclock.NewFakeClock(epoch)
	opts = append([]Option{WithClock(clk), WithImages(PauseImage, TestbinImage)}, opts...)
	r := New(opts...)
	t.Cleanup(func() { _ = r.Close() })
	return r, clk
}

func podConfig(name string) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: "uid-" + name},
		Hostname: name,
		Labels:   map[string]string{"app": name},
	}
}

// hostNetwork puts cfg on the node's network; like kubelet it then sends
// no hostname (runc cannot set one in the node's UTS namespace).
func hostNetwork(cfg *runtimeapi.PodSandboxConfig) *runtimeapi.PodSandboxConfig {
	cfg.Hostname = ""
	cfg.Linux = &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
	}}
	return cfg
}

func runPod(t *testing.T, r *Runtime, cfg *runtimeapi.PodSandboxConfig) string {
	t.Helper()
	resp, err := r.RunPodSandbox(context.Background(), &runtimeapi.RunPodSandboxRequest{Config: cfg})
	require.NoError(t, err)
	return resp.PodSandboxId
}

// testbin is a ContainerConfig of the test image running args.
func testbin(name string, args ...string) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: TestbinImage},
		Args:     args,
		Labels:   map[string]string{"container": name},
	}
}

func create(t *testing.T, r *Runtime, sbID string, sbCfg *runtimeapi.PodSandboxConfig, cfg *runtimeapi.ContainerConfig) string {
	t.Helper()
	resp, err := r.CreateContainer(context.Background(), &runtimeapi.CreateContainerRequest{
		PodSandboxId: sbID, SandboxConfig: sbCfg, Config: cfg,
	})
	require.NoError(t, err)
	return resp.ContainerId
}

func start(t *testing.T, r *Runtime, id string) {
	t.Helper()
	_, err := r.StartContainer(context.Background(), &runtimeapi.StartContainerRequest{ContainerId: id})
	require.NoError(t, err)
}

// run creates and starts a container in a new pod.
func run(t *testing.T, r *Runtime, cfg *runtimeapi.ContainerConfig) (sbID, id string) {
	t.Helper()
	pc := podConfig("pod-" + cfg.GetMetadata().GetName())
	sbID = runPod(t, r, pc)
	id = create(t, r, sbID, pc, cfg)
	start(t, r, id)
	return sbID, id
}

func containerStatus(t *testing.T, r *Runtime, id string) *runtimeapi.ContainerStatus {
	t.Helper()
	resp, err := r.ContainerStatus(context.Background(), &runtimeapi.ContainerStatusRequest{ContainerId: id})
	require.NoError(t, err)
	return resp.Status
}

func sandboxStatus(t *testing.T, r *Runtime, id string) *runtimeapi.PodSandboxStatus {
	t.Helper()
	resp, err := r.PodSandboxStatus(context.Background(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
	require.NoError(t, err)
	return resp.Status
}

// requireCode checks a gRPC status code and, if given, part of the message.
func requireCode(t *testing.T, err error, code codes.Code, contains string) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, status.Code(err), "error: %v", err)
	if contains != "" {
		require.Contains(t, status.Convert(err).Message(), contains)
	}
}

// awaitWaiters spins (without sleeping) until the fake clock has at least
// n waiters, i.e. a goroutine has armed a timer on it. The wall-clock
// deadline only turns a hang into a failure.
func awaitWaiters(t *testing.T, clk *testingclock.FakeClock, n int) {
	t.Helper()
	poll.Eventually(t, func() bool { return clk.Waiters() >= n }, 10*time.Second, 0, "the fake clock has %d waiters", n)
}

// async runs f in a goroutine and returns its error on a channel.
func async[T any](f func() (T, error)) <-chan error {
	ch := make(chan error, 1)
	go func() {
		_, err := f()
		ch <- err
	}()
	return ch
}
