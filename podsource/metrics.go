package podsource

import "github.com/prometheus/client_golang/prometheus"

// Metrics of the sources and the mux, as a Collector the caller registers.
// A nil *Metrics is valid and records nothing.
type Metrics struct {
	invalid    *prometheus.CounterVec
	conflicts  *prometheus.CounterVec
	fetchErrs  *prometheus.CounterVec
	updates    *prometheus.CounterVec
	pods       *prometheus.GaugeVec
	collectors []prometheus.Collector
}

// NewMetrics returns the podsource_* metrics.
func NewMetrics() *Metrics {
	m := &Metrics{
		invalid: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "podsource_invalid_manifests_total",
			Help: "Manifests that failed to decode or validate and were skipped, by source."}, []string{"source"}),
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "podsource_conflicts_total",
			Help: "Pods rejected because another source (or pod) already provides the same namespace/name, by rejected source."}, []string{"source"}),
		fetchErrs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "podsource_fetch_errors_total",
			Help: "Failed reads of a source (URL fetch, directory read); the last good set was kept."}, []string{"source"}),
		updates: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "podsource_updates_total",
			Help: "Pod updates emitted by the mux, by source and op."}, []string{"source", "op"}),
		pods: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "podsource_pods",
			Help: "Pods currently provided by each source (after conflict resolution)."}, []string{"source"}),
	}
	m.collectors = []prometheus.Collector{m.invalid, m.conflicts, m.fetchErrs, m.updates, m.pods}
	return m
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.collectors {
		c.Collect(ch)
	}
}

func (m *Metrics) invalidManifest(source string) {
	if m != nil {
		m.invalid.WithLabelValues(source).Inc()
	}
}

func (m *Metrics) conflict(source string) {
	if m != nil {
		m.conflicts.WithLabelValues(source).Inc()
	}
}

// FetchError counts a failed fetch of source (for sources outside this
// package, such as podsource/apiserver).
func (m *Metrics) FetchError(source string) { m.fetchError(source) }

func (m *Metrics) fetchError(source string) {
	if m != nil {
		m.fetchErrs.WithLabelValues(source).Inc()
	}
}

func (m *Metrics) update(source string, op Op, n int) {
	if m != nil && n > 0 {
		m.updates.WithLabelValues(source, string(op)).Add(float64(n))
	}
}

func (m *Metrics) setPods(source string, n int) {
	if m != nil {
		m.pods.WithLabelValues(source).Set(float64(n))
	}
}
