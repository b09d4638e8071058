package prober

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/prober/probe"
)

// kubelet prober worker.doProbe: a probe that errored is thrown away (no
// count, no duration); a success is counted and timed, a failure only
// counted; ProberDuration has component-base's default buckets
// (prometheus.DefBuckets).
func TestMetricsCountAndTimeAsTheKubelet(t *testing.T) {
	e := newEnv(t, v1.Container{ReadinessProbe: execProbe("ready")})
	e.st.set("uid", "c", "id1", kc.ContainerStateRunning, e.clock.Now(), 0)
	e.script.push("ready", probe.Success, probe.Failure)
	e.probe(Readiness) // success
	e.probe(Readiness) // failure
	e.script.mu.Lock()
	e.script.errs["ready"] = maxProbeRetries
	e.script.mu.Unlock()
	e.probe(Readiness) // errored: thrown away

	want := `# HELP prober_probe_total Cumulative number of a liveness, readiness or startup probe for a container by result.
# TYPE prober_probe_total counter
prober_probe_total{container="c",namespace="ns",pod="p",pod_uid="uid",probe_type="Readiness",result="failed"} 1
prober_probe_total{container="c",namespace="ns",pod="p",pod_uid="uid",probe_type="Readiness",result="successful"} 1
prober_probe_total{container="c",namespace="ns",pod="p",pod_uid="uid",probe_type="Readiness",result="unknown"} 0
`
	require.NoError(t, testutil.CollectAndCompare(e.m.cfg.Metrics, strings.NewReader(want), "prober_probe_total"))
	var out dto.Metric
	w := e.m.worker("uid", "c", Readiness)
	require.NotNil(t, w)
	require.NoError(t, w.duration.(interface{ Write(*dto.Metric) error }).Write(&out))
	h := out.GetHistogram()
	assert.Equal(t, uint64(1), h.GetSampleCount(), "only the successful probe is timed")
	var bounds []float64
	for _, b := range h.GetBucket() {
		bounds = append(bounds, b.GetUpperBound())
	}
	assert.Equal(t, []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}, bounds, "prometheus.DefBuckets")
}
