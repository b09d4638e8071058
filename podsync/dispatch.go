package podsync

import (
	"errors"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit-dev/nodekit/admission"
	"github.com/nodekit-dev/nodekit/podsource"
	"github.com/nodekit-dev/nodekit/podstatus"
	"github.com/nodekit-dev/nodekit/podworkers"
	"github.com/nodekit-dev/nodekit/resources"
)

// DispatchWorkers is the pod workers' part a Dispatcher uses;
// *podworkers.Workers implements it.
type DispatchWorkers interface {
	State(uid types.UID) (podworkers.State, bool)
	UpdatePod(u podworkers.Update)
	// ReplacePod takes a known pod's newer object, different only in its
	// API status (a RECONCILE), in place of the one held, without work.
	ReplacePod(pod *v1.Pod)
}

// MirrorSplitter takes the mirror pods out of an update (their static
// pods are what runs), noting them for the status target and the orphans'
// clean-up; *mirrorpod.Manager implements it. removed is true only for a
// REMOVE (the pods are gone from the API).
type MirrorSplitter interface {
	Split(pods []*v1.Pod, removed bool) []*v1.Pod
}

// DispatchStatuses is the status manager's part a Dispatcher uses;
// *podstatus.Manager implements it.
type DispatchStatuses interface {
	SetPodStatus(pod *v1.Pod, status v1.PodStatus) bool
	RemovePod(uid types.UID)
	// ReplacePod: as DispatchWorkers'.
	ReplacePod(pod *v1.Pod)
}

// EventRecorder records a refused pod's event; *events.Recorder (as
// client-go's record.EventRecorder) implements it.
type EventRecorder interface {
	Eventf(object apiruntime.Object, eventtype, reason, messageFmt string, args ...any)
}

// DispatchConfig configures a Dispatcher.
type DispatchConfig struct {
	Workers DispatchWorkers
	// Prober gets each admitted pod's probes.
	Prober interface{ AddPod(pod *v1.Pod) }
	// Statuses gets a refused pod's status, and forgets an API pod's final
	// status once its source says it is gone.
	Statuses DispatchStatuses
	// Admit are asked, in order, about each new pod (eviction's *Manager,
	// admission's *Sysctls and *Predicate, which refuses a pod over
	// --max-pods as OutOfpods, are three).
	Admit []admission.PodAdmitHandler
	// Recorder, if set, gets a refused pod's Warning event.
	Recorder EventRecorder
	// Mirrors, in cluster mode; nil takes nothing out.
	Mirrors MirrorSplitter
	// Allocation, if set, records each admitted pod's allocation and
	// decides about a known pod whose update asks for other resources (an
	// in-place resize), beside ActivePods (required with it).
	Allocation Allocation
	ActivePods admission.ActivePods
	Log        logr.Logger
}

// Dispatcher hands the pod sources' updates to the pod workers, as the
// kubelet's HandlePodAdditions, Updates and Removes do: a new pod is
// admitted unless an Admit handler refuses it; a refused pod is never run, its status
// is the kubelet's rejectPod's (Failed, the reason, "Pod was rejected: "
// and the message). A new pod already Failed or Succeeded in its source
// (seen again after a restart) is not asked about: it goes to the workers,
// without probes, and its final status to the status manager; the workers
// keep it Terminated, or terminate it first if something of it still
// runs. A known pod is updated; on a status-only
// change (RECONCILE) the workers and status manager hold the newer object
// instead, as the kubelet's pod manager does, and the pod is synced at once
// only if a readiness gate's condition changed what its Ready condition
// should say (podstatus.ReadyStale); a removed or deleted one
// killed (once), and a removed pod the workers have forgotten loses its
// status.
type Dispatcher struct{ cfg DispatchConfig }

// NewDispatcher checks cfg and fills in the defaults.
func NewDispatcher(cfg DispatchConfig) (*Dispatcher, error) {
	if cfg.Workers == nil || cfg.Prober == nil || cfg.Statuses == nil {
		return nil, errors.New("podsync: DispatchConfig: Workers, Prober and Statuses are required")
	}
	if cfg.Allocation != nil && cfg.ActivePods == nil {
		return nil, errors.New("podsync: DispatchConfig: ActivePods is required with Allocation")
	}
	return &Dispatcher{cfg: cfg}, nil
}

// Dispatch applies one update.
func (d *Dispatcher) Dispatch(u podsource.PodUpdate) {
	removing := u.Op == podsource.REMOVE || u.Op == podsource.DELETE
	if d.cfg.Mirrors != nil {
		// Only a REMOVE takes a mirror pod out of the API. A DELETE (a
		// deletion timestamp, a graceful deletion) leaves it there until
		// the agent deletes it; the kubelet treats it as an update, and its
		// pod manager keeps the mirror pod, so that HandlePodCleanups
		// deletes it once its static pod is gone. Forgotten here, it would
		// stay in the API for good.
		u.Pods = d.cfg.Mirrors.Split(u.Pods, u.Op == podsource.REMOVE)
	}
	for _, pod := range u.Pods {
		state, known := d.cfg.Workers.State(pod.UID)
		switch {
		case (u.Op == podsource.ADD || u.Op == podsource.SET) && !known:
			// The kubelet's HandlePodAdditions admits only pods that may
			// run: one already Failed or Succeeded in its source (seen
			// again after a restart) keeps its final status, unprobed; a
			// refusal would overwrite that status. The workers terminate
			// what still runs of it.
			finished := pod.Status.Phase == v1.PodFailed || pod.Status.Phase == v1.PodSucceeded
			if !finished {
				if r := d.admit(pod); !r.Admit {
					d.reject(pod, r.Reason, r.Message)
					continue
				}
			}
			d.cfg.Log.Info("pod added", "pod", podName(pod), "uid", pod.UID, "source", u.Source)
			if !finished && d.cfg.Allocation != nil {
				// The kubelet's HandlePodAdditions: the checkpointed
				// allocation wins after a restart; a resize asked
				// meanwhile waits for RetryPending, once every pod of the
				// update is in.
				d.cfg.Allocation.AddPod(pod)
				d.cfg.Allocation.Backfill(pod)
			}
			if finished {
				// Its final status, held as the kubelet's SyncTerminatedPod
				// sets it: once the pod is deleted, the status writer
				// finishes the deletion, which nothing else would.
				d.cfg.Statuses.SetPodStatus(pod, pod.Status)
			} else {
				d.cfg.Prober.AddPod(pod)
			}
			d.cfg.Workers.UpdatePod(podworkers.Update{Type: podworkers.SyncPodCreate, Pod: pod})
		case u.Op == podsource.RECONCILE && known:
			// The kubelet's HandlePodReconcile gives its pod manager the
			// newer object; here the workers and the status manager hold
			// it, so the older one is not kept beside the source's.
			d.cfg.Workers.ReplacePod(pod)
			d.cfg.Statuses.ReplacePod(pod)
			if podstatus.ReadyStale(pod) {
				// A controller changed a readiness gate's condition: Ready
				// is written now, as the kubelet's HandlePodReconcile
				// does, not at the resync a minute or more later.
				d.cfg.Workers.UpdatePod(podworkers.Update{Type: podworkers.SyncPodSync, Pod: pod})
			}
		case u.Op == podsource.UPDATE && known:
			if d.cfg.Allocation != nil {
				if _, differs := d.cfg.Allocation.AllocatedPod(pod); differs {
					// The kubelet's HandlePodUpdates: a resize is decided
					// before the sync that carries it out.
					d.cfg.Allocation.HandleResize(pod, d.cfg.ActivePods.ActivePods())
				}
			}
			d.cfg.Workers.UpdatePod(podworkers.Update{Type: podworkers.SyncPodUpdate, Pod: pod})
		case u.Op == podsource.REMOVE && !known:
			d.cfg.Statuses.RemovePod(pod.UID) // an API pod gone once its final status was written
		case removing && known:
			// Also while it terminates: a removal lets the workers forget
			// a finished or evicted pod once terminated, and a shorter
			// grace period (a force deletion) cuts the termination short.
			if state != podworkers.Terminating {
				d.cfg.Log.Info("pod removed from its source", "pod", podName(pod), "source", u.Source)
			}
			d.cfg.Workers.UpdatePod(podworkers.Update{Type: podworkers.SyncPodKill, Pod: pod})
		}
	}
}

// admit asks each Admit handler, in order, about a new pod.
func (d *Dispatcher) admit(pod *v1.Pod) admission.PodAdmitResult {
	for _, h := range d.cfg.Admit {
		if r := h.Admit(pod); !r.Admit {
			return r
		}
	}
	return admission.PodAdmitResult{Admit: true}
}

// reject is the kubelet's rejectPod: a Warning event and a Failed status.
func (d *Dispatcher) reject(pod *v1.Pod, reason, message string) {
	d.cfg.Log.Info("pod rejected", "pod", podName(pod), "reason", reason, "message", message)
	if d.cfg.Recorder != nil {
		d.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, reason, "%s", message)
	}
	status := v1.PodStatus{QOSClass: resources.PodQOSClass(pod), Phase: v1.PodFailed,
		Reason: reason, Message: "Pod was rejected: " + message}
	d.cfg.Statuses.SetPodStatus(pod, status)
	// The kubelet's pod manager keeps a rejected pod (its /pods lists it);
	// here the workers do, as a pod that arrived finished: Terminated, never
	// started, forgotten when its source removes it. The copy carries the
	// Failed phase that keeps it so; the source's pod is not modified.
	rejected := *pod
	rejected.Status = status
	d.cfg.Workers.UpdatePod(podworkers.Update{Type: podworkers.SyncPodCreate, Pod: &rejected, Refused: true})
}
