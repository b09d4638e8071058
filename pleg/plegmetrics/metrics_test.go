package plegmetrics_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/pleg/plegmetrics"
)

func TestMetricsUseKubeletNames(t *testing.T) {
	m := plegmetrics.New()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	m.Relisted(0, 10*time.Millisecond) // the first relist has no interval
	m.Seen(time.Unix(1002, 0), 1, map[kc.ContainerState]int{kc.ContainerStateRunning: 1, kc.ContainerStateExited: 1})
	m.Relisted(2*time.Second, 5*time.Millisecond)

	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP kubelet_running_pods Number of pods that have a running pod sandbox
# TYPE kubelet_running_pods gauge
kubelet_running_pods 1
# HELP kubelet_running_containers Number of containers currently running
# TYPE kubelet_running_containers gauge
kubelet_running_containers{container_state="created"} 0
kubelet_running_containers{container_state="exited"} 1
kubelet_running_containers{container_state="running"} 1
kubelet_running_containers{container_state="unknown"} 0
# HELP kubelet_pleg_last_seen_seconds Timestamp in seconds when PLEG was last seen active.
# TYPE kubelet_pleg_last_seen_seconds gauge
kubelet_pleg_last_seen_seconds 1002
`), "kubelet_running_pods", "kubelet_running_containers", "kubelet_pleg_last_seen_seconds"))

	m.EventDiscarded()
	m.StreamConnected()
	m.StreamFailed()
	m.StreamFailed()
	m.EventLatency(time.Millisecond)
	for name, want := range map[string]uint64{"kubelet_pleg_relist_duration_seconds": 2, "kubelet_pleg_relist_interval_seconds": 1,
		"kubelet_evented_pleg_connection_latency_seconds": 1} {
		assert.Equal(t, want, sampleCount(t, reg, name), name)
	}
	assert.Equal(t, 1.0, counter(t, reg, "kubelet_pleg_discard_events"))
	assert.Equal(t, 1.0, counter(t, reg, "kubelet_evented_pleg_connection_success_count"))
	assert.Equal(t, 2.0, counter(t, reg, "kubelet_evented_pleg_connection_error_count"))
}

func metric(t *testing.T, reg *prometheus.Registry, name string) *dto.Metric {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name {
			require.Len(t, f.Metric, 1, name)
			return f.Metric[0]
		}
	}
	t.Fatalf("no metric %s", name)
	return nil
}

func sampleCount(t *testing.T, reg *prometheus.Registry, name string) uint64 {
	return metric(t, reg, name).GetHistogram().GetSampleCount()
}

func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	return metric(t, reg, name).GetCounter().GetValue()
}
