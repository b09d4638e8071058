package podstartup

import (
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// DurationBuckets are the kubelet's podStartupDurationBuckets, in seconds:
// those of every pod start histogram (podsync's
// kubelet_pod_start_duration_seconds too). Do not modify.
var DurationBuckets = []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200,
	1800, 2700, 3600}

// Config configures a Tracker.
type Config struct {
	// Clock times image pulls and when a status was written. Default: real.
	Clock clock.PassiveClock
	// Log gets the kubelet's "Observed pod startup duration" line per pod.
	Log logr.Logger
}

// Tracker follows each pod from its creation to its start observed on the
// watch, as the kubelet's basicPodStartupLatencyTracker. It is safe for
// concurrent use.
type Tracker struct {
	clock clock.PassiveClock
	log   logr.Logger

	sli, total   prometheus.Histogram
	firstNetwork prometheus.Gauge

	mu                  sync.Mutex
	pods                map[types.UID]*podState
	excluded            map[types.UID]bool // created unschedulable: never tracked
	firstNetworkPodSeen bool
}

// podState is what the Tracker knows of one pod.
type podState struct {
	pulls      []pull      // finished image pulls
	pullStarts []time.Time // pulls under way, oldest first
	initTotal  time.Duration
	initStart  time.Time // of the init container running, if any
	running    time.Time // when a status with every container started was written
	watched    time.Time // when the watch first showed every container started
	observed   bool      // its startup was observed
}

type pull struct{ start, end time.Time }

// New returns a Tracker with the kubelet's metrics.
func New(cfg Config) *Tracker {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	help := " measured from pod creation timestamp to when all its containers are reported as started and observed via watch"
	return &Tracker{clock: cfg.Clock, log: cfg.Log, pods: map[types.UID]*podState{}, excluded: map[types.UID]bool{},
		sli: prometheus.NewHistogram(prometheus.HistogramOpts{Subsystem: "kubelet", Name: "pod_start_sli_duration_seconds",
			Help:    "Duration in seconds to start a pod, excluding time to pull images and run init containers," + help,
			Buckets: DurationBuckets}),
		total: prometheus.NewHistogram(prometheus.HistogramOpts{Subsystem: "kubelet", Name: "pod_start_total_duration_seconds",
			Help:    "Duration in seconds to start a pod since creation, including time to pull images and run init containers," + help,
			Buckets: DurationBuckets}),
		firstNetwork: prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: "kubelet", Name: "first_network_pod_start_sli_duration_seconds",
			Help: "Duration in seconds to start the first network pod, excluding time to pull images and run init containers," + help}),
	}
}

// Describe implements prometheus.Collector.
func (t *Tracker) Describe(ch chan<- *prometheus.Desc) {
	t.sli.Describe(ch)
	t.total.Describe(ch)
	t.firstNetwork.Describe(ch)
}

// Collect implements prometheus.Collector.
func (t *Tracker) Collect(ch chan<- prometheus.Metric) {
	t.sli.Collect(ch)
	t.total.Collect(ch)
	t.firstNetwork.Collect(ch)
}

// ObservedPodOnWatch takes pod as its source delivered it at when. A pod
// not yet started (no status start time) is tracked from then on, unless
// it is unschedulable; a tracked one whose written status showed it
// started and which now shows every container running is observed, once.
// A finished pod is forgotten.
func (t *Tracker) ObservedPodOnWatch(pod *v1.Pod, when time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if pod.Status.Phase == v1.PodFailed || pod.Status.Phase == v1.PodSucceeded {
		delete(t.pods, pod.UID)
		return
	}
	st := t.pods[pod.UID]
	switch {
	case st == nil && !t.excluded[pod.UID] && pod.Status.StartTime.IsZero():
		if unschedulable(pod) {
			t.excluded[pod.UID] = true
		} else {
			t.pods[pod.UID] = &podState{}
		}
		return
	case st == nil:
		return
	case unschedulable(pod):
		delete(t.pods, pod.UID)
		t.excluded[pod.UID] = true
		return
	case st.observed || !started(pod):
		return
	case st.running.IsZero():
		// The watch brought the write before its answer came back: the
		// startup is observed with this time once the answer is in.
		if st.watched.IsZero() {
			st.watched = when
		}
		return
	}
	t.observe(pod, st, when)
}

// observe records pod's startup, observed on the watch at when.
func (t *Tracker) observe(pod *v1.Pod, st *podState, when time.Time) {
	total := when.Sub(pod.CreationTimestamp.Time)
	pulling := pullingTime(st.pulls)
	sli := total - pulling - st.initTotal
	stateful := isStateful(pod)
	t.log.Info("Observed pod startup duration", "pod", klogRef(pod), "podStartSLOduration", sli.Seconds(),
		"podStartE2EDuration", total, "totalImagesPullingTime", pulling, "totalInitContainerRuntime", st.initTotal,
		"isStatefulPod", stateful, "podCreationTimestamp", pod.CreationTimestamp.Time,
		"observedRunningTime", st.running, "watchObservedRunningTime", when)
	t.total.Observe(total.Seconds())
	if !stateful {
		t.sli.Observe(sli.Seconds())
		if !pod.Spec.HostNetwork && !t.firstNetworkPodSeen {
			t.firstNetwork.Set(sli.Seconds())
			t.firstNetworkPodSeen = true
		}
	}
	st.observed = true
}

// RecordStatusUpdated takes pod, the API server's answer to a status
// write: the first that shows every container started is when the pod ran.
// If the watch showed that write already (its event can come before the
// answer), the startup is observed now, at the watch's time; the
// kubelet's tracker waits for a later event, which a pod whose status
// does not change again never gives.
func (t *Tracker) RecordStatusUpdated(pod *v1.Pod) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.pods[pod.UID]
	if st == nil || st.observed || !st.running.IsZero() || !started(pod) {
		return
	}
	st.running = t.clock.Now()
	if !st.watched.IsZero() {
		t.observe(pod, st, st.watched)
	}
}

// RecordImageStartedPulling notes that a pull of an image for the pod began.
func (t *Tracker) RecordImageStartedPulling(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st := t.pods[uid]; st != nil {
		st.pullStarts = append(st.pullStarts, t.clock.Now())
	}
}

// RecordImageFinishedPulling ends the pod's oldest pull under way, if any
// (an image found present ends one another pod's pull may have left).
func (t *Tracker) RecordImageFinishedPulling(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st := t.pods[uid]; st != nil && len(st.pullStarts) > 0 {
		st.pulls = append(st.pulls, pull{start: st.pullStarts[0], end: t.clock.Now()})
		st.pullStarts = st.pullStarts[1:]
	}
}

// RecordInitContainerStarted notes that one of the pod's init containers
// (not a sidecar) started at at.
func (t *Tracker) RecordInitContainerStarted(uid types.UID, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st := t.pods[uid]; st != nil {
		st.initStart = at
	}
}

// RecordInitContainerFinished notes that the init container started last
// exited at at; its run counts against the SLI once.
func (t *Tracker) RecordInitContainerFinished(uid types.UID, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.pods[uid]
	if st == nil || st.initStart.IsZero() {
		return
	}
	if d := at.Sub(st.initStart); d > 0 {
		st.initTotal += d
	}
	st.initStart = time.Time{}
}

// DeletePodStartupState forgets the pod: it is gone from the node.
func (t *Tracker) DeletePodStartupState(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.pods, uid)
	delete(t.excluded, uid)
}

// Tracked returns how many pods the Tracker holds (tests, leak checks).
func (t *Tracker) Tracked() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pods) + len(t.excluded)
}
