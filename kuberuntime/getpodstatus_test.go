package kuberuntime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit-dev/nodekit/kuberuntime"
)

// listsMeet makes ListPodSandbox and ListContainers each wait until the
// other has been called (at most wait), or fail with failList's error.
type listsMeet struct {
	kuberuntime.RuntimeService
	sandboxes, containers chan struct{}
	wait                  time.Duration
	failList              string // "sandboxes" or "containers": that list fails
}

var errListFailed = errors.New("list failed")

func (l *listsMeet) meet(mine, other chan struct{}, which string) error {
	close(mine)
	select {
	case <-other:
	case <-time.After(l.wait):
		return errors.New(which + " listed alone: the other list was not called meanwhile")
	}
	if l.failList == which {
		return errListFailed
	}
	return nil
}

func (l *listsMeet) ListPodSandbox(ctx context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	if err := l.meet(l.sandboxes, l.containers, "sandboxes"); err != nil {
		return nil, err
	}
	return l.RuntimeService.ListPodSandbox(ctx, f)
}

func (l *listsMeet) ListContainers(ctx context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	if err := l.meet(l.containers, l.sandboxes, "containers"); err != nil {
		return nil, err
	}
	return l.RuntimeService.ListContainers(ctx, f)
}

// GetPodStatus reads a pod's sandboxes and its containers at the same
// time: on a busy runtime a pod's running status waits for this read
// after its container starts, and two CRI round trips in a row are twice
// the wait (#34). Either list failing fails the read.
func TestGetPodStatusReadsSandboxesAndContainersAtOnce(t *testing.T) {
	e := newManagerEnv(t)
	pod := podSpec("meet", v1.RestartPolicyAlways, v1.Container{Name: "c", Image: testImage})
	_, before := e.sync(pod, nil)
	require.Len(t, before.ContainerStatuses, 1)
	for _, fail := range []string{"", "sandboxes", "containers"} {
		t.Run("fail="+fail, func(t *testing.T) {
			rt := &listsMeet{RuntimeService: e.client, sandboxes: make(chan struct{}), containers: make(chan struct{}),
				wait: 10 * time.Second, failList: fail}
			m, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: rt, Images: e.client, Clock: e.clock,
				PodLogsDir: e.logs, DNS: kuberuntime.HostDNS("", nil, "")})
			require.NoError(t, err)
			st, err := m.GetPodStatus(context.Background(), pod.UID, pod.Name, pod.Namespace)
			if fail != "" {
				require.ErrorIs(t, err, errListFailed)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, before, st)
		})
	}
}
