package runtime

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics counts CRI operations under the kubelet's metric names. It is a
// prometheus.Collector: the caller registers it (nothing is global) and
// passes it to Dial with WithMetrics.
type Metrics struct {
	ops      *prometheus.CounterVec
	errs     *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics returns the kubelet_runtime_operations_* metrics.
func NewMetrics() *Metrics {
	return &Metrics{
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "kubelet", Name: "runtime_operations_total",
			Help: "Cumulative number of runtime operations by operation type.",
		}, []string{"operation_type"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "kubelet", Name: "runtime_operations_errors_total",
			Help: "Cumulative number of runtime operation errors by operation type.",
		}, []string{"operation_type"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "runtime_operations_duration_seconds",
			Help:    "Duration in seconds of runtime operations. Broken down by operation type.",
			Buckets: prometheus.ExponentialBuckets(.005, 2.5, 14),
		}, []string{"operation_type"}),
	}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.ops.Describe(ch)
	m.errs.Describe(ch)
	m.duration.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.ops.Collect(ch)
	m.errs.Collect(ch)
	m.duration.Collect(ch)
}

func (m *Metrics) observe(op string, start time.Time, err error) {
	if m == nil {
		return
	}
	m.ops.WithLabelValues(op).Inc()
	m.duration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if err != nil {
		m.errs.WithLabelValues(op).Inc()
	}
}

// streamError counts an error that ended a stream after it opened.
func (m *Metrics) streamError(op string) {
	if m != nil {
		m.errs.WithLabelValues(op).Inc()
	}
}

// operationNames maps CRI methods to the kubelet's operation_type label
// values (pkg/kubelet/kuberuntime/instrumented_services.go).
var operationNames = map[string]string{
	"Version": "version", "Status": "status", "RuntimeConfig": "runtime_config",
	"RunPodSandbox": "run_podsandbox", "StopPodSandbox": "stop_podsandbox",
	"RemovePodSandbox": "remove_podsandbox", "PodSandboxStatus": "podsandbox_status",
	"ListPodSandbox": "list_podsandbox", "CreateContainer": "create_container",
	"StartContainer": "start_container", "StopContainer": "stop_container",
	"RemoveContainer": "remove_container", "ListContainers": "list_containers",
	"ContainerStatus": "container_status", "UpdateContainerResources": "update_container",
	"ReopenContainerLog": "reopen_container_log", "ExecSync": "exec_sync", "Exec": "exec",
	"Attach": "attach", "PortForward": "port_forward", "ContainerStats": "container_stats",
	"ListContainerStats": "list_container_stats", "PodSandboxStats": "podsandbox_stats",
	"ListPodSandboxStats": "list_podsandbox_stats", "UpdateRuntimeConfig": "update_runtime_config",
	"GetContainerEvents": "get_container_events", "ListMetricDescriptors": "list_metric_descriptors",
	"ListPodSandboxMetrics": "list_podsandbox_metrics", "CheckpointContainer": "checkpoint_container",
	"ListImages": "list_images", "ImageStatus": "image_status", "PullImage": "pull_image",
	"RemoveImage": "remove_image", "ImageFsInfo": "image_fs_info",
}

// operationName turns "/runtime.v1.RuntimeService/ListContainers" into
// "list_containers".
func operationName(fullMethod string) string {
	method := fullMethod[strings.LastIndexByte(fullMethod, '/')+1:]
	if op, ok := operationNames[method]; ok {
		return op
	}
	return strings.ToLower(method)
}
