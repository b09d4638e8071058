package podsync

import (
	"errors"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit-dev/nodekit/podsource"
	"github.com/nodekit-dev/nodekit/podworkers"
)

// DefaultMaxPods is the kubelet's --max-pods.
const DefaultMaxPods = 110

// DispatchWorkers is the pod workers' part a Dispatcher uses;
// *podworkers.Workers implements it.
type DispatchWorkers interface {
	State(uid types.UID) (podworkers.State, bool)
	Pods() []*v1.Pod
	UpdatePod(u podworkers.Update)
}

// MirrorSplitter takes the mirror pods out of an update (their static
// pods are what runs), noting them for the status target;
// *mirrorpod.Manager implements it.
type MirrorSplitter interface {
	Split(pods []*v1.Pod, removed bool) []*v1.Pod
}

// DispatchConfig configures a Dispatcher.
type DispatchConfig struct {
	Workers DispatchWorkers
	// Prober gets each admitted pod's probes.
	Prober interface{ AddPod(pod *v1.Pod) }
	// Statuses forgets an API pod's final status once its source says it
	// is gone.
	Statuses interface{ RemovePod(uid types.UID) }
	// Mirrors, in cluster mode; nil takes nothing out.
	Mirrors MirrorSplitter
	// MaxPods is the most pods admitted (default 110).
	MaxPods int
	Log     logr.Logger
}

// Dispatcher hands the pod sources' updates to the pod workers, as the
// kubelet's HandlePodAdditions, Updates and Removes do: a new pod is
// admitted unless the node has MaxPods already (the kubelet's OutOfpods),
// a known one updated, a removed or deleted one killed (once), and a
// removed pod the workers have forgotten loses its status.
type Dispatcher struct{ cfg DispatchConfig }

// NewDispatcher checks cfg and fills in the defaults.
func NewDispatcher(cfg DispatchConfig) (*Dispatcher, error) {
	if cfg.Workers == nil || cfg.Prober == nil || cfg.Statuses == nil {
		return nil, errors.New("podsync: DispatchConfig: Workers, Prober and Statuses are required")
	}
	if cfg.MaxPods <= 0 {
		cfg.MaxPods = DefaultMaxPods
	}
	return &Dispatcher{cfg: cfg}, nil
}

// Dispatch applies one update.
func (d *Dispatcher) Dispatch(u podsource.PodUpdate) {
	removing := u.Op == podsource.REMOVE || u.Op == podsource.DELETE
	if d.cfg.Mirrors != nil {
		u.Pods = d.cfg.Mirrors.Split(u.Pods, removing)
	}
	for _, pod := range u.Pods {
		state, known := d.cfg.Workers.State(pod.UID)
		switch {
		case (u.Op == podsource.ADD || u.Op == podsource.SET) && !known:
			if len(d.cfg.Workers.Pods()) >= d.cfg.MaxPods {
				d.cfg.Log.Info("pod rejected: node has reached --max-pods", "pod", podName(pod), "maxPods", d.cfg.MaxPods)
				continue
			}
			d.cfg.Log.Info("pod added", "pod", podName(pod), "uid", pod.UID, "source", u.Source)
			d.cfg.Prober.AddPod(pod)
			d.cfg.Workers.UpdatePod(podworkers.Update{Type: podworkers.SyncPodCreate, Pod: pod})
		case u.Op == podsource.UPDATE && known:
			d.cfg.Workers.UpdatePod(podworkers.Update{Type: podworkers.SyncPodUpdate, Pod: pod})
		case u.Op == podsource.REMOVE && !known:
			d.cfg.Statuses.RemovePod(pod.UID) // an API pod gone once its final status was written
		case removing && known && state != podworkers.Terminating:
			d.cfg.Log.Info("pod removed from its source", "pod", podName(pod), "source", u.Source)
			d.cfg.Workers.UpdatePod(podworkers.Update{Type: podworkers.SyncPodKill, Pod: pod})
		}
	}
}
