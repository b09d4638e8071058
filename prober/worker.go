package prober

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/prober/probe"
)

// maxProbeRetries is how often a probe that errored (as opposed to failed)
// is retried within one period, as in the kubelet.
const maxProbeRetries = 3

type workerKey struct {
	uid       types.UID
	container string
	probeType ProbeType
}

// worker is one (pod, container, probe type): the kubelet's per-probe state
// machine, driven by the scheduler instead of its own goroutine and ticker.
type worker struct {
	key       workerKey
	pod       *v1.Pod
	container *v1.Container
	spec      v1.Probe // defaulted copy
	results   *Results
	mgr       *Manager

	// Probe state, touched only by the goroutine running doProbe.
	containerID string
	lastResult  probe.Result
	resultRun   int
	onHold      bool

	// Scheduling state, guarded by the scheduler's lock.
	due     time.Time
	seq     uint64 // of the worker's live heap entry
	queued  bool   // has a live heap entry
	running bool
	removed bool

	// The batched probe in flight, and its callback (made once, not per
	// probe); touched only by the scheduler's goroutine.
	flight    inFlight
	batchDone probe.Done

	// Metric handles resolved once, not per probe.
	total    map[probe.Result]prometheus.Counter
	duration prometheus.Observer
}

// inFlight is a batched probe's context.
type inFlight struct {
	status *kc.PodStatus
	id     string
	start  time.Time
}

func (w *worker) period() time.Duration { return time.Duration(w.spec.PeriodSeconds) * time.Second }

// doProbe is one period of the worker, run synchronously: prepare, the
// probe through the Runner (errors retried), record. It reports false when
// the worker should stop for good.
func (w *worker) doProbe(ctx context.Context) bool {
	status, id, probeNow, keep := w.prepare()
	if !probeNow {
		return keep
	}
	w.probe(ctx, status, id)
	return true
}

// probe runs the probe through the Runner and records its outcome.
func (w *worker) probe(ctx context.Context, status *kc.PodStatus, id string) {
	start := w.mgr.cfg.Clock.Now()
	res, msg, err := w.runWithRetries(ctx, status, id)
	w.record(id, res, msg, err, w.mgr.cfg.Clock.Since(start))
}

// prepare is a period's bookkeeping before any probe: it follows the
// container's current ID, honours the initial delay, startup gating and
// the hold after a liveness/startup failure. probeNow says to probe the
// container id of status now; if not, keep says whether the worker lives on.
func (w *worker) prepare() (status *kc.PodStatus, id string, probeNow, keep bool) {
	status, err := w.mgr.cfg.Statuses.Get(w.key.uid)
	if err != nil || status == nil {
		return nil, "", false, true // not known yet, or the runtime can't say: wait
	}
	c := status.FindContainerStatusByName(w.container.Name)
	if c == nil || c.ID == "" {
		return nil, "", false, true // not created yet
	}
	if w.containerID != c.ID {
		if w.containerID != "" {
			w.results.remove(w.containerID)
		}
		w.containerID = c.ID
		w.results.set(c.ID, initialResult(w.key.probeType), w.key.uid)
		w.lastResult, w.resultRun, w.onHold = probe.Unknown, 0, false // a new container: start over
	}
	if w.onHold {
		return nil, "", false, true // failed liveness/startup: wait for the restart
	}
	if c.State != kc.ContainerStateRunning {
		w.results.set(c.ID, probe.Failure, w.key.uid)
		return nil, "", false, !willNotRestart(w.pod, w.container, c)
	}
	if w.pod.DeletionTimestamp != nil && (w.key.probeType == Liveness || w.key.probeType == Startup) {
		// Shutting down: never kill a container for failing now.
		w.results.set(c.ID, probe.Success, w.key.uid)
		return nil, "", false, false
	}
	if w.mgr.cfg.Clock.Since(c.StartedAt) < time.Duration(w.spec.InitialDelaySeconds)*time.Second {
		return nil, "", false, true
	}
	started := w.mgr.started(w.key.uid, w.container.Name, c.ID)
	if started == (w.key.probeType == Startup) {
		// Startup probes stop once started; the others wait for it.
		return nil, "", false, true
	}
	return status, c.ID, true, true
}

// target is what w probes in container id of status.
func (w *worker) target(status *kc.PodStatus, id string) ProbeTarget {
	return ProbeTarget{Pod: w.pod, Container: w.container, ContainerID: id, PodIPs: status.IPs, HostIP: w.mgr.cfg.HostIP}
}

// runWithRetries runs the probe through the Runner, retrying errors.
func (w *worker) runWithRetries(ctx context.Context, status *kc.PodStatus, id string) (res probe.Result, msg string, err error) {
	t := w.target(status, id)
	for i := 0; i < maxProbeRetries; i++ {
		if res, msg, err = w.mgr.cfg.Runner.Run(ctx, &w.spec, t); err == nil {
			break
		}
	}
	return res, msg, err
}

// record applies a probe's outcome for container id: metrics and logs,
// then the thresholds: success and warning count as Success, anything else
// as Failure; an error gives no result this period and, as the kubelet's
// doProbe throws it away, is neither counted nor timed. Only successes
// are timed, as the kubelet does.
func (w *worker) record(id string, res probe.Result, msg string, err error, took time.Duration) {
	var result probe.Result
	switch {
	case err != nil:
		w.mgr.cfg.Log.V(1).Info("probe errored", "probeType", w.key.probeType, "pod", podRef(w.pod), "container", w.container.Name, "error", err.Error())
		w.event(EventUnhealthy, "%s probe errored: %v", w.key.probeType, err)
		return
	case res == probe.Success || res == probe.Warning:
		if res == probe.Warning {
			w.mgr.cfg.Log.V(1).Info("probe warning", "probeType", w.key.probeType, "pod", podRef(w.pod), "container", w.container.Name, "output", msg)
			w.event(EventProbeWarning, "%s probe warning: %s", w.key.probeType, msg)
		}
		w.total[probe.Success].Inc()
		w.duration.Observe(took.Seconds())
		result = probe.Success
	default:
		w.total[probe.Failure].Inc()
		w.mgr.cfg.Log.V(1).Info("probe failed", "probeType", w.key.probeType, "pod", podRef(w.pod), "container", w.container.Name, "output", msg)
		w.event(EventUnhealthy, "%s probe failed: %s", w.key.probeType, msg)
		result = probe.Failure
	}
	if w.lastResult == result {
		w.resultRun++
	} else {
		w.lastResult, w.resultRun = result, 1
	}
	if (result == probe.Failure && w.resultRun < int(w.spec.FailureThreshold)) ||
		(result == probe.Success && w.resultRun < int(w.spec.SuccessThreshold)) {
		return // below the threshold: no change yet
	}
	w.results.set(id, result, w.key.uid)
	if result == probe.Failure && (w.key.probeType == Liveness || w.key.probeType == Startup) {
		// The container will be restarted; probing it meanwhile only races
		// with the kill.
		w.onHold, w.resultRun = true, 0
	}
}

// event records a warning on the container, as the kubelet does for every
// failed probe (the recorder's correlator aggregates repeats).
func (w *worker) event(reason, format string, args ...any) {
	if w.mgr.cfg.Recorder == nil {
		return
	}
	ref := &v1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: w.pod.Namespace, Name: w.pod.Name, UID: w.pod.UID,
		ResourceVersion: w.pod.ResourceVersion, FieldPath: kc.ContainerFieldPath(w.pod, w.container.Name)}
	w.mgr.cfg.Recorder.Eventf(ref, v1.EventTypeWarning, reason, format, args...)
}

// willNotRestart: a terminated container the restart policy leaves dead.
// A sidecar is always restarted, whatever the pod's restartPolicy.
func willNotRestart(pod *v1.Pod, spec *v1.Container, c *kc.ContainerStatus) bool {
	if c.State != kc.ContainerStateExited {
		return false
	}
	return !kc.ShouldRestart(spec, &pod.Spec, int32(c.ExitCode))
}

func podRef(p *v1.Pod) string { return p.Namespace + "/" + p.Name }

// defaulted fills the API server's defaults a static pod may lack.
func defaulted(p *v1.Probe) v1.Probe {
	out := *p
	if out.TimeoutSeconds <= 0 {
		out.TimeoutSeconds = 1
	}
	if out.PeriodSeconds <= 0 {
		out.PeriodSeconds = 10
	}
	if out.SuccessThreshold <= 0 {
		out.SuccessThreshold = 1
	}
	if out.FailureThreshold <= 0 {
		out.FailureThreshold = 3
	}
	return out
}
