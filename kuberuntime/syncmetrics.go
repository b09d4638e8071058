package kuberuntime

import (
	"github.com/prometheus/client_golang/prometheus"
)

// The kubelet's container_type label values (pkg/kubelet/metrics).
const (
	containerTypeContainer = "container"
	containerTypeInit      = "init_container"
	containerTypeEphemeral = "ephemeral_container"
)

// SyncMetrics counts the pods and containers SyncPod starts, under the
// kubelet's names (pkg/kubelet/metrics, observed in kuberuntime's
// SyncPod): kubelet_started_pods_total and kubelet_started_pods_errors_total
// for sandbox creations, kubelet_started_containers_total{container_type}
// and kubelet_started_containers_errors_total{container_type,code} for
// container starts, code being the kubelet's error ("ErrImagePull",
// "CreateContainerConfigError", "RunContainerError"...). A container in
// CrashLoopBackOff is not counted: the kubelet does not try it. It is a
// prometheus.Collector the caller registers and passes as
// ManagerConfig.Metrics.
type SyncMetrics struct {
	pods, podErrors              prometheus.Counter
	containers, containersErrors *prometheus.CounterVec
}

// NewSyncMetrics returns the started pods and containers counters.
func NewSyncMetrics() *SyncMetrics {
	return &SyncMetrics{
		pods: prometheus.NewCounter(prometheus.CounterOpts{Subsystem: "kubelet", Name: "started_pods_total",
			Help: "Cumulative number of pods started"}),
		podErrors: prometheus.NewCounter(prometheus.CounterOpts{Subsystem: "kubelet", Name: "started_pods_errors_total",
			Help: "Cumulative number of errors when starting pods"}),
		containers: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "kubelet", Name: "started_containers_total",
			Help: "Cumulative number of containers started"}, []string{"container_type"}),
		containersErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "kubelet", Name: "started_containers_errors_total",
			Help: "Cumulative number of errors when starting containers"}, []string{"container_type", "code"}),
	}
}

// Describe implements prometheus.Collector.
func (m *SyncMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.pods.Describe(ch)
	m.podErrors.Describe(ch)
	m.containers.Describe(ch)
	m.containersErrors.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *SyncMetrics) Collect(ch chan<- prometheus.Metric) {
	m.pods.Collect(ch)
	m.podErrors.Collect(ch)
	m.containers.Collect(ch)
	m.containersErrors.Collect(ch)
}

// sandboxCreated counts a sandbox creation SyncPod tried.
func (m *SyncMetrics) sandboxCreated(err error) {
	if m == nil {
		return
	}
	m.pods.Inc()
	if err != nil {
		m.podErrors.Inc()
	}
}

// containerStarted counts a container start SyncPod tried (past its
// back-off), by container type: init containers (sidecars among them),
// ephemeral containers, or the others.
func (m *SyncMetrics) containerStarted(typ string, err error) {
	if m == nil {
		return
	}
	m.containers.WithLabelValues(typ).Inc()
	if err != nil {
		m.containersErrors.WithLabelValues(typ, SyncStep{Err: err}.Reason()).Inc()
	}
}
