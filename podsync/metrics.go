package podsync

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit-dev/nodekit/podstartup"
	"github.com/nodekit-dev/nodekit/podworkers"
)

// configSeenAnnotation is when a pod source first delivered the pod
// (podsource stamps it, RFC 3339 with nanoseconds, as the kubelet's config).
const configSeenAnnotation = "kubernetes.io/config.seen"

// Metrics are the kubelet's pod sync metrics (pkg/kubelet/metrics), as a
// prometheus.Collector the caller registers:
//
//   - kubelet_pod_start_duration_seconds: from the pod's config.seen to
//     its first status, then again to its first Running status, observed
//     by the Syncer (Config.Metrics) when it publishes a status, as the
//     kubelet's SyncPod does.
//   - kubelet_pod_worker_duration_seconds{operation_type}: how long one
//     pod worker's Work took, by "create" (the pod's first sync), "update"
//     (the first after its source changed it), "sync" or "kill"; hand
//     ObserveWork to podworkers.Config.OnDone. The kubelet times from the
//     dispatch of the update; nodekit's workers coalesce updates, so the
//     Work itself is timed.
//   - kubelet_pod_status_sync_duration_seconds: from a pod's status change
//     being published to the API server having it, even if more changes
//     came meanwhile; hand ObserveStatusSync to podstatus's
//     APIWriterConfig.StatusSynced. The kubelet's times from the pod's
//     first status ever (its start time is never reset); this one from the
//     first change not yet written, as its help text says.
type Metrics struct {
	start      prometheus.Histogram
	worker     *prometheus.HistogramVec
	statusSync prometheus.Histogram

	mu     sync.Mutex
	synced map[types.UID]struct{} // the pods synced before
}

// NewMetrics returns the pod start, pod worker and status sync histograms.
func NewMetrics() *Metrics {
	return &Metrics{
		start: prometheus.NewHistogram(prometheus.HistogramOpts{Subsystem: "kubelet", Name: "pod_start_duration_seconds",
			Help:    "Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run",
			Buckets: podstartup.DurationBuckets}),
		worker: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "kubelet", Name: "pod_worker_duration_seconds",
			Help:    "Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync",
			Buckets: prometheus.DefBuckets}, []string{"operation_type"}),
		statusSync: prometheus.NewHistogram(prometheus.HistogramOpts{Subsystem: "kubelet", Name: "pod_status_sync_duration_seconds",
			Help: "Duration in seconds to sync a pod status update. Measures time from detection of a change to pod status " +
				"until the API is successfully updated for that pod, even if multiple intevening changes to pod status occur.",
			Buckets: []float64{0.010, 0.050, 0.100, 0.500, 1, 5, 10, 20, 30, 45, 60}}),
		synced: map[types.UID]struct{}{},
	}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.start.Describe(ch)
	m.worker.Describe(ch)
	m.statusSync.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.start.Collect(ch)
	m.worker.Collect(ch)
	m.statusSync.Collect(ch)
}

// ObserveWork times one Work of the pod workers; it has the signature of
// podworkers.Config.OnDone.
func (m *Metrics) ObserveWork(w podworkers.Work, took time.Duration, _ error) {
	op := "kill"
	if w.Type == podworkers.SyncPod {
		m.mu.Lock()
		_, seen := m.synced[w.Pod.UID]
		m.synced[w.Pod.UID] = struct{}{}
		m.mu.Unlock()
		switch {
		case !seen:
			op = "create"
		case w.Updated:
			op = "update"
		default:
			op = "sync"
		}
	} else {
		m.mu.Lock()
		delete(m.synced, w.Pod.UID)
		m.mu.Unlock()
	}
	m.worker.WithLabelValues(op).Observe(took.Seconds())
}

// ObserveStatusSync times one status brought up to date in the API
// server, to the millisecond as the kubelet's; it has the signature of
// podstatus's APIWriterConfig.StatusSynced.
func (m *Metrics) ObserveStatusSync(took time.Duration) {
	m.statusSync.Observe(took.Truncate(time.Millisecond).Seconds())
}

// podStatusPublished is the kubelet's SyncPod rule: with the pod's
// config.seen time, the start duration is observed when the pod had no
// status yet, or when it goes from Pending to Running. Terminal statuses
// are not (the kubelet returns before).
func (m *Metrics) podStatusPublished(pod *v1.Pod, prev v1.PodStatus, hadStatus bool, phase v1.PodPhase, now time.Time) {
	if m == nil || phase == v1.PodSucceeded || phase == v1.PodFailed {
		return
	}
	seen, err := time.Parse(time.RFC3339Nano, pod.Annotations[configSeenAnnotation])
	if err != nil {
		return
	}
	if !hadStatus || prev.Phase == v1.PodPending && phase == v1.PodRunning {
		m.start.Observe(now.Sub(seen).Seconds())
	}
}
