package plegmetrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/pleg"
)

// Metrics are the kubelet's PLEG metrics, as a Collector the caller
// registers. One Metrics may serve both the relister and the evented PLEG.
type Metrics struct {
	relistDuration prometheus.Histogram
	relistInterval prometheus.Histogram
	lastSeen       prometheus.Gauge
	discardEvents  prometheus.Counter
	connErrors     prometheus.Counter
	connSuccess    prometheus.Counter
	eventLatency   prometheus.Histogram
	runningPods    prometheus.Gauge
	runningCtrs    *prometheus.GaugeVec
	collectors     []prometheus.Collector
}

var _ pleg.Metrics = (*Metrics)(nil)

// New returns the kubelet_pleg_*, kubelet_evented_pleg_* and
// kubelet_running_* metrics.
func New() *Metrics {
	m := &Metrics{
		relistDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Subsystem: "kubelet", Name: "pleg_relist_duration_seconds",
			Help: "Duration in seconds for relisting pods in PLEG.", Buckets: prometheus.DefBuckets}),
		relistInterval: prometheus.NewHistogram(prometheus.HistogramOpts{Subsystem: "kubelet", Name: "pleg_relist_interval_seconds",
			Help: "Interval in seconds between relisting in PLEG.", Buckets: prometheus.DefBuckets}),
		lastSeen: prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: "kubelet", Name: "pleg_last_seen_seconds",
			Help: "Timestamp in seconds when PLEG was last seen active."}),
		discardEvents: prometheus.NewCounter(prometheus.CounterOpts{Subsystem: "kubelet", Name: "pleg_discard_events",
			Help: "The number of discard events in PLEG."}),
		connErrors: prometheus.NewCounter(prometheus.CounterOpts{Subsystem: "kubelet", Name: "evented_pleg_connection_error_count",
			Help: "The number of errors encountered during the establishment of streaming connection with the CRI runtime."}),
		connSuccess: prometheus.NewCounter(prometheus.CounterOpts{Subsystem: "kubelet", Name: "evented_pleg_connection_success_count",
			Help: "The number of times a streaming client was obtained to receive CRI Events."}),
		eventLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Subsystem: "kubelet", Name: "evented_pleg_connection_latency_seconds",
			Help: "The latency of streaming connection with the CRI runtime, measured in seconds.", Buckets: prometheus.DefBuckets}),
		runningPods: prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: "kubelet", Name: "running_pods",
			Help: "Number of pods that have a running pod sandbox"}),
		runningCtrs: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "kubelet", Name: "running_containers",
			Help: "Number of containers currently running"}, []string{"container_state"}),
	}
	m.collectors = []prometheus.Collector{m.relistDuration, m.relistInterval, m.lastSeen, m.discardEvents,
		m.connErrors, m.connSuccess, m.eventLatency, m.runningPods, m.runningCtrs}
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

// Relisted implements pleg.Metrics.
func (m *Metrics) Relisted(interval, duration time.Duration) {
	if interval > 0 {
		m.relistInterval.Observe(interval.Seconds())
	}
	m.relistDuration.Observe(duration.Seconds())
}

// Seen implements pleg.Metrics.
func (m *Metrics) Seen(start time.Time, pods int, containers map[kc.ContainerState]int) {
	m.lastSeen.Set(float64(start.Unix()))
	m.runningPods.Set(float64(pods))
	for _, s := range []kc.ContainerState{kc.ContainerStateCreated, kc.ContainerStateRunning, kc.ContainerStateExited, kc.ContainerStateUnknown} {
		m.runningCtrs.WithLabelValues(string(s)).Set(float64(containers[s]))
	}
}

// EventDiscarded implements pleg.Metrics.
func (m *Metrics) EventDiscarded() { m.discardEvents.Inc() }

// StreamConnected implements pleg.Metrics.
func (m *Metrics) StreamConnected() { m.connSuccess.Inc() }

// StreamFailed implements pleg.Metrics.
func (m *Metrics) StreamFailed() { m.connErrors.Inc() }

// EventLatency implements pleg.Metrics.
func (m *Metrics) EventLatency(d time.Duration) { m.eventLatency.Observe(d.Seconds()) }
