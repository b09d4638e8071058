package runtime_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

func TestClientMetricsUseKubeletNames(t *testing.T) {
	f := fake.New(fake.WithImages(testImage))
	endpoint := "unix://" + filepath.Join(t.TempDir(), "cri.sock")
	stop, err := f.Start(endpoint)
	require.NoError(t, err)
	defer stop()
	metrics := runtime.NewMetrics()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(metrics))
	ctx := context.Background()
	client, err := runtime.Dial(ctx, endpoint, runtime.WithMetrics(metrics))
	require.NoError(t, err)
	defer client.Close(ctx)

	_, err = client.ListPodSandbox(ctx, nil)
	require.NoError(t, err)
	_, err = client.ListPodSandbox(ctx, nil)
	require.NoError(t, err)
	_, err = client.ContainerStatus(ctx, "missing", false)
	require.ErrorIs(t, err, runtime.ErrNotFound)

	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP kubelet_runtime_operations_total Cumulative number of runtime operations by operation type.
# TYPE kubelet_runtime_operations_total counter
kubelet_runtime_operations_total{operation_type="container_status"} 1
kubelet_runtime_operations_total{operation_type="list_podsandbox"} 2
kubelet_runtime_operations_total{operation_type="version"} 1
# HELP kubelet_runtime_operations_errors_total Cumulative number of runtime operation errors by operation type.
# TYPE kubelet_runtime_operations_errors_total counter
kubelet_runtime_operations_errors_total{operation_type="container_status"} 1
`), "kubelet_runtime_operations_total", "kubelet_runtime_operations_errors_total"))
	assert.Equal(t, 3, testutil.CollectAndCount(metrics, "kubelet_runtime_operations_duration_seconds"), "one histogram per operation")
}

func TestClientErrorsAndTimeouts(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	f := fake.New(fake.WithImages(testImage), fake.WithClock(clk))
	endpoint := "unix://" + filepath.Join(t.TempDir(), "cri.sock")
	stop, err := f.Start(endpoint)
	require.NoError(t, err)
	defer stop()
	ctx := context.Background()
	client, err := runtime.Dial(ctx, endpoint, runtime.WithTimeout(200*time.Millisecond))
	require.NoError(t, err)
	defer client.Close(ctx)

	// The runtime never answers (its latency waits on a clock nobody steps):
	// the per-call timeout cuts the call off.
	f.SetLatency("ListContainers", time.Hour)
	_, err = client.ListContainers(ctx, nil)
	require.Error(t, err)
	assert.ErrorIs(t, err, runtime.ErrDeadlineExceeded)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	var rerr *runtime.Error
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, "list_containers", rerr.Op)
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "status.Code still works")
	f.ClearInjections()

	// Codes map to the sentinel errors.
	f.InjectError("Status", status.Error(codes.Unimplemented, "no"), 1)
	_, err = client.Status(ctx, false)
	assert.ErrorIs(t, err, runtime.ErrUnimplemented)
	assert.False(t, errors.Is(err, runtime.ErrNotFound))

	// NotFound on stop and remove is success; on status it is an error.
	f.InjectError("StopContainer", status.Error(codes.NotFound, "gone"), 1)
	assert.NoError(t, client.StopContainer(ctx, "x", 1))
	f.InjectError("RemoveImage", status.Error(codes.NotFound, "gone"), 1)
	assert.NoError(t, client.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: "x"}))
	_, err = client.PodSandboxStatus(ctx, "x", false)
	assert.ErrorIs(t, err, runtime.ErrNotFound)
}

func TestDialRejectsBadEndpoints(t *testing.T) {
	for _, ep := range []string{"tcp://127.0.0.1:1", "relative.sock", "unix://relative"} {
		_, err := runtime.Dial(context.Background(), ep)
		require.Error(t, err, ep)
		assert.Contains(t, err.Error(), ep)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := runtime.Dial(ctx, "unix://"+filepath.Join(t.TempDir(), "nobody.sock"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not answer CRI v1 Version")
}
