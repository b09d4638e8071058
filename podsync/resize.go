package podsync

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit-dev/nodekit/cgroupmgr"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/podworkers"
)

// Allocation is the allocation manager (in-place resize);
// *allocation.Manager implements it.
type Allocation interface {
	kuberuntime.ResizeState
	// AddPod records an admitted pod's allocation.
	AddPod(pod *v1.Pod) *v1.Pod
	AllocatedPod(pod *v1.Pod) (allocated *v1.Pod, differs bool)
	HandleResize(pod *v1.Pod, active []*v1.Pod) bool
	// Backfill restores a new pod's resize conditions from its API
	// status and queues a resize the allocation does not have yet.
	Backfill(pod *v1.Pod)
	RetryPending(pod func(types.UID) (*v1.Pod, bool), active []*v1.Pod) []*v1.Pod
	SyncDone(allocated *v1.Pod, inProgress bool, err error)
	Conditions(uid types.UID) []v1.PodCondition
	RemoveOrphans(keep func(types.UID) bool)
}

// PodCgroupResizer sets a pod's cgroup for an in-place resize;
// *cgroupmgr.Manager implements it. A Config.Cgroups without it keeps
// setting the pod's cgroup with EnsurePodCgroup.
type PodCgroupResizer interface {
	ResizePodCgroup(pod *v1.Pod, grow bool) (cgroupmgr.CgroupName, error)
}

// allocated is the pod a sync runs: as allocated, with the Allocation.
func (s *Syncer) allocated(pod *v1.Pod) *v1.Pod {
	if s.cfg.Allocation == nil {
		return pod
	}
	a, _ := s.cfg.Allocation.AllocatedPod(pod)
	return a
}

// resizing says whether a running container of pod (allocated) is to be
// resized by this sync.
func (s *Syncer) resizing(pod *v1.Pod, st *kc.PodStatus) bool {
	return s.cfg.Allocation != nil && st != nil && kuberuntime.ResizeInProgress(pod, st, s.cfg.Allocation)
}

// podCgroup ensures pod's cgroup and returns its path: for a resize, with
// no limit lowered before the containers are resized.
func (s *Syncer) podCgroup(pod *v1.Pod, resize bool) (string, error) {
	var name cgroupmgr.CgroupName
	var err error
	if r, ok := s.cfg.Cgroups.(PodCgroupResizer); ok && resize {
		name, err = r.ResizePodCgroup(pod, true)
	} else {
		name, err = s.cfg.Cgroups.EnsurePodCgroup(pod)
	}
	if err != nil {
		return "", err
	}
	return s.cfg.Cgroups.Path(name), nil
}

// resizeDone ends a sync that resized: the pod's cgroup to exactly its
// resources, and the Allocation told whether the resize is complete.
func (s *Syncer) resizeDone(pod *v1.Pod, st *kc.PodStatus, res *kuberuntime.SyncResult, resized bool) {
	if s.cfg.Allocation == nil {
		return
	}
	var err error
	for _, step := range res.Steps {
		if step.Action == kuberuntime.ActionResizePodInPlace && step.Err != nil {
			err = step.Err
		}
	}
	if r, ok := s.cfg.Cgroups.(PodCgroupResizer); ok && resized && err == nil {
		_, err = r.ResizePodCgroup(pod, false)
	}
	s.cfg.Allocation.SyncDone(pod, s.resizing(pod, st), err)
}

// retryResizes takes the deferred resizes again and syncs those allocated
// now (the kubelet's RetryPendingResizes, at each housekeeping).
func (s *Syncer) retryResizes(w Workers) {
	if s.cfg.Allocation == nil {
		return
	}
	pods := map[types.UID]*v1.Pod{}
	for _, p := range w.Pods() {
		pods[p.UID] = p
	}
	lookup := func(uid types.UID) (*v1.Pod, bool) { p, ok := pods[uid]; return p, ok }
	for _, p := range s.cfg.Allocation.RetryPending(lookup, activePods(w)) {
		w.UpdatePod(podworkers.Update{Type: podworkers.SyncPodSync, Pod: p})
	}
	known := w.Known()
	s.cfg.Allocation.RemoveOrphans(func(uid types.UID) bool { return known[uid] })
}

// activePods are w's active pods when it tells them apart (the pod
// workers do), else all its pods.
func activePods(w Workers) []*v1.Pod {
	if a, ok := w.(interface{ ActivePods() []*v1.Pod }); ok {
		return a.ActivePods()
	}
	return w.Pods()
}
