package prober

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/nodekit-dev/nodekit/prober/probe"
)

// Metrics are the kubelet's prober metrics, as a Collector the caller
// registers.
type Metrics struct {
	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics returns prober_probe_total and prober_probe_duration_seconds
// with the kubelet's labels (pkg/kubelet/prober/prober_manager.go): the
// total by probe_type, result, container, pod, namespace and pod_uid, the
// duration without result and pod_uid, in prometheus.DefBuckets, of the
// successful probes only; an errored probe is not counted (the kubelet's
// worker.doProbe throws it away), so "unknown" stays 0. The kubelet
// serves them on /metrics/probes, on a registry of their own
// (server.Config.ProbeMetrics).
func NewMetrics() *Metrics {
	return &Metrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "prober", Name: "probe_total",
			Help: "Cumulative number of a liveness, readiness or startup probe for a container by result.",
		}, []string{"probe_type", "result", "container", "pod", "namespace", "pod_uid"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "prober", Name: "probe_duration_seconds",
			Help:    "Duration in seconds for a probe response.",
			Buckets: prometheus.DefBuckets, // component-base's default: the kubelet sets none
		}, []string{"probe_type", "container", "pod", "namespace"}),
	}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.total.Describe(ch)
	m.duration.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.total.Collect(ch)
	m.duration.Collect(ch)
}

// The kubelet's values of the result label.
var resultLabels = map[probe.Result]string{probe.Success: "successful", probe.Failure: "failed", probe.Unknown: "unknown"}

func (m *Metrics) bind(w *worker) {
	t, c, p, ns, uid := string(w.key.probeType), w.container.Name, w.pod.Name, w.pod.Namespace, string(w.pod.UID)
	w.total = make(map[probe.Result]prometheus.Counter, 3)
	for r, label := range resultLabels {
		w.total[r] = m.total.WithLabelValues(t, label, c, p, ns, uid)
	}
	w.duration = m.duration.WithLabelValues(t, c, p, ns)
}

func (m *Metrics) unbind(w *worker) {
	t, c, p, ns, uid := string(w.key.probeType), w.container.Name, w.pod.Name, w.pod.Namespace, string(w.pod.UID)
	for _, label := range resultLabels {
		m.total.DeleteLabelValues(t, label, c, p, ns, uid)
	}
	m.duration.DeleteLabelValues(t, c, p, ns)
}
