package main

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit-dev/nodekit/resources"
	"github.com/nodekit-dev/nodekit/runtime"
)

// errorResyncPeriod is how soon a pod whose sync failed (a container in
// back-off, an image missing) is synced again.
const errorResyncPeriod = time.Second

// podWorker serializes everything done to one pod, like the kubelet's pod
// workers: a sync runs only after the status cache has seen the runtime
// since the previous sync, so each sync acts on what the last one did.
type podWorker struct {
	pod     *v1.Pod // replaced under mu by setPod; read by the worker goroutine through spec()
	source  string
	trigger chan struct{}
	stop    chan struct{}
	done    chan struct{}

	mu      sync.Mutex
	status  v1.PodStatus
	started time.Time
}

// newPodWorker starts pod off as Pending: admitted but not yet synced, so
// /pods never shows a known pod without a phase.
func newPodWorker(pod *v1.Pod, source string) *podWorker {
	return &podWorker{pod: pod, source: source, trigger: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		status: v1.PodStatus{Phase: v1.PodPending, QOSClass: resources.ComputePodQOS(pod)}}
}

// poke asks for a sync; pokes while one is pending merge.
func (w *podWorker) poke() {
	select {
	case w.trigger <- struct{}{}:
	default:
	}
}

func (w *podWorker) setPod(p *v1.Pod) {
	w.mu.Lock()
	w.pod = p
	w.mu.Unlock()
}

func (w *podWorker) spec() *v1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pod
}

func (w *podWorker) apiPod() v1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := *w.pod
	p.Status = w.status
	return p
}

// runWorker syncs w's pod until ctx ends or w is stopped; it starts once
// previous (the last same-named pod's termination, if any) is done.
func (a *agent) runWorker(ctx context.Context, w *podWorker, previous <-chan struct{}) {
	defer close(w.done)
	if previous != nil {
		select {
		case <-previous:
		case <-ctx.Done():
			return
		case <-w.stop:
			a.terminate(w)
			return
		}
	}
	var lastSync time.Time
	var retry <-chan time.Time
	w.poke()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.stop:
			a.terminate(w)
			return
		case <-w.trigger:
		case <-retry:
		}
		retry = nil
		pod := w.spec()
		status, err := a.cache.GetNewerThan(ctx, pod.UID, lastSync)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			a.log.Error(err, "reading pod status", "pod", podName(pod))
		}
		parent, err := a.podCgroup(pod)
		if err != nil {
			a.log.Error(err, "pod cgroup", "pod", podName(pod))
			retry = a.clock.After(errorResyncPeriod)
			continue
		}
		res := a.mgr.SyncPod(ctx, pod, status, runtime.SyncOptions{Probes: a.prober, CgroupParent: parent})
		// After the sync, as the kubelet: the next one waits for a relist that
		// started once this one's changes were made.
		lastSync = a.clock.Now()
		for _, s := range res.Steps {
			if s.Err != nil && s.Reason() != "CrashLoopBackOff" {
				a.log.Info("sync step failed", "pod", podName(pod), "action", s.Action, "target", s.Target, "reason", s.Reason(), "message", s.Message)
			}
		}
		if res.Error() != nil {
			retry = a.clock.After(errorResyncPeriod)
		}
		if changed(res) {
			a.refreshStatus(ctx, pod)
		}
		a.publish(w, pod, res)
	}
}

// changed says whether a sync started or stopped anything.
func changed(res *runtime.SyncResult) bool {
	for _, s := range res.Steps {
		if s.Err == nil {
			return true
		}
	}
	return false
}

// refreshStatus reads the pod back from the runtime after a sync that
// changed it, so its new state is published now rather than after the next
// relist (up to --relist-period later; the kubelet waits for that relist).
// The status is read after the sync, so it satisfies the next sync's
// GetNewerThan(lastSync) without waiting; the PLEG still sees the change
// and its events cause one more, idle, sync.
func (a *agent) refreshStatus(ctx context.Context, pod *v1.Pod) {
	at := a.clock.Now()
	st, err := a.mgr.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return // the relist will bring it
	}
	a.cache.Set(pod.UID, st, nil, at)
}

// podCgroup creates or updates the pod's cgroup and returns it as the
// sandbox's cgroup parent ("" without cgroups-per-qos).
func (a *agent) podCgroup(pod *v1.Pod) (string, error) {
	if a.cgroups == nil {
		return "", nil
	}
	name, err := a.cgroups.EnsurePodCgroup(pod)
	if err != nil {
		return "", err
	}
	return a.cgroups.Path(name), nil
}

// publish recomputes the pod's API status after a sync from the status
// cache (refreshed by refreshStatus when the sync changed something).
func (a *agent) publish(w *podWorker, pod *v1.Pod, res *runtime.SyncResult) {
	st, err := a.cache.Get(pod.UID)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started.IsZero() {
		w.started = a.clock.Now()
	}
	status := apiStatus(pod, st, res, a.runtimePrefix, a.cfg.hostIP, w.started)
	a.prober.UpdatePodStatus(pod, &status)
	finishConditions(&status)
	if summary := summarize(status); summary != summarize(w.status) {
		a.log.Info("pod status", "pod", podName(pod), "phase", status.Phase, "containers", summary)
	}
	w.status = status
}

// terminate kills a pod removed from its source and removes what is left,
// its cgroup included.
func (a *agent) terminate(w *podWorker) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	defer func() {
		if err := a.volumes.TearDown(w.pod); err != nil {
			a.log.Error(err, "removing pod volumes", "pod", podName(w.pod))
		}
		if a.cgroups != nil {
			if err := a.cgroups.DestroyPodCgroup(w.pod); err != nil {
				a.log.Error(err, "removing pod cgroup", "pod", podName(w.pod))
			}
		}
	}()
	a.prober.RemovePod(w.pod.UID)
	if err := killAndRemove(ctx, a.mgr, w.pod, w.pod.UID, w.pod.Name, w.pod.Namespace); err != nil {
		a.log.Error(err, "terminating pod", "pod", podName(w.pod))
		return
	}
	a.log.Info("pod terminated and removed", "pod", podName(w.pod))
}

// killAndRemove kills the runtime's pod uid with pod's grace periods (pod
// nil: those recorded on its containers) and removes its containers and
// sandboxes.
func killAndRemove(ctx context.Context, mgr *runtime.Manager, pod *v1.Pod, uid types.UID, name, namespace string) error {
	st, err := mgr.GetPodStatus(ctx, uid, name, namespace)
	if err != nil {
		return err
	}
	if err := mgr.KillPod(ctx, pod, runtime.PodFromStatus(st), nil); err != nil {
		return err
	}
	return mgr.RemovePod(ctx, uid)
}
