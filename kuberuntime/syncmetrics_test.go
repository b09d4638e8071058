package kuberuntime_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

// kubelet kuberuntime SyncPod: StartedPodsTotal/StartedPodsErrorsTotal
// around createPodSandbox; StartedContainersTotal{container_type} before
// startContainer and StartedContainersErrorsTotal{container_type,code} with
// its error when it fails; a container in back-off is not tried, not counted.
func TestSyncMetricsCountStartsAsTheKubelet(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1700000000, 0))
	f, client := startFake(t, fake.WithClock(clk))
	metrics := kuberuntime.NewSyncMetrics()
	m, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: client, Clock: clk, Metrics: metrics,
		PodLogsDir: t.TempDir(), DNS: kuberuntime.HostDNS("", nil, "")})
	require.NoError(t, err)
	e := &managerEnv{t: t, clock: clk, fake: f, client: client, m: m, ctx: context.Background()}

	pod := podSpec("err", v1.RestartPolicyAlways,
		v1.Container{Name: "a", Image: testImage, Args: []string{"sleep"}},
		v1.Container{Name: "b", Image: "nodekit.local/other:1"},
		v1.Container{Name: "c", Image: testImage, Args: []string{"exit", "1"}})
	pod.Spec.InitContainers = []v1.Container{{Name: "init", Image: testImage, Args: []string{"exit", "0"}}}
	f.InjectError("RunPodSandbox", errors.New("sandbox boom"), 1)
	e.sync(pod, nil) // the sandbox fails
	e.sync(pod, nil) // the sandbox, then the init container
	e.sync(pod, nil) // a starts, b's pull fails, c starts and exits
	e.sync(pod, nil) // b in ImagePullBackOff (tried, counted), c restarted at once
	e.sync(pod, nil) // b in ImagePullBackOff again, c in CrashLoopBackOff (not tried)

	require.NoError(t, testutil.CollectAndCompare(metrics, strings.NewReader(`
# HELP kubelet_started_containers_errors_total Cumulative number of errors when starting containers
# TYPE kubelet_started_containers_errors_total counter
kubelet_started_containers_errors_total{code="ErrImagePull",container_type="container"} 1
kubelet_started_containers_errors_total{code="ImagePullBackOff",container_type="container"} 2
# HELP kubelet_started_containers_total Cumulative number of containers started
# TYPE kubelet_started_containers_total counter
kubelet_started_containers_total{container_type="container"} 6
kubelet_started_containers_total{container_type="init_container"} 1
# HELP kubelet_started_pods_errors_total Cumulative number of errors when starting pods
# TYPE kubelet_started_pods_errors_total counter
kubelet_started_pods_errors_total 1
# HELP kubelet_started_pods_total Cumulative number of pods started
# TYPE kubelet_started_pods_total counter
kubelet_started_pods_total 2
`)))
}
