package kuberuntime_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit-dev/nodekit/kuberuntime"
)

// cancelledMidStart cancels the sync as soon as the container is created,
// as a deletion arriving then does, and records what StartContainer got.
type cancelledMidStart struct {
	kuberuntime.RuntimeService
	cancel      context.CancelFunc
	startCtxErr error
	started     bool
}

func (c *cancelledMidStart) CreateContainer(ctx context.Context, sandboxID string, cfg *runtimeapi.ContainerConfig,
	sandboxCfg *runtimeapi.PodSandboxConfig) (string, error) {
	id, err := c.RuntimeService.CreateContainer(ctx, sandboxID, cfg, sandboxCfg)
	c.cancel()
	return id, err
}

func (c *cancelledMidStart) StartContainer(ctx context.Context, id string) error {
	c.startCtxErr, c.started = ctx.Err(), true
	return c.RuntimeService.StartContainer(ctx, id)
}

// A sync cancelled between CreateContainer and StartContainer still starts
// the container it created: a cancelled StartContainer leaves containerd's
// container stuck "in starting state", which nothing can remove.
func TestSyncPodFinishesAStartItBegan(t *testing.T) {
	e := newManagerEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rt := &cancelledMidStart{RuntimeService: e.client, cancel: cancel}
	m, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: rt, Images: e.client, Clock: e.clock,
		PodLogsDir: e.logs, DNS: kuberuntime.HostDNS("", nil, "")})
	require.NoError(t, err)
	pod := podSpec("start", v1.RestartPolicyAlways, v1.Container{Name: "c", Image: testImage})
	st, err := m.GetPodStatus(context.Background(), pod.UID, pod.Name, pod.Namespace)
	require.NoError(t, err)
	res := m.SyncPod(ctx, pod, st, kuberuntime.SyncOptions{})
	require.True(t, rt.started, "steps: %v", res.Steps)
	assert.NoError(t, rt.startCtxErr, "StartContainer is not cancelled with the sync")
	st, err = m.GetPodStatus(context.Background(), pod.UID, pod.Name, pod.Namespace)
	require.NoError(t, err)
	require.Len(t, st.ContainerStatuses, 1)
	assert.Equal(t, "running", string(st.ContainerStatuses[0].State))
}
