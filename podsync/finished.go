package podsync

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/nodekit-dev/nodekit/kuberuntime"
)

// terminateKept is the kubelet's SyncTerminatingPod and
// SyncTerminatedPod for a pod that stays while its source still has it:
// one whose phase became terminal, or one evicted (grace, edit: the
// eviction's). What still runs (a sidecar, a container the phase did not
// wait for) is killed with its grace period, readiness probed until then;
// then its volumes and cgroup go. Its containers and sandbox stay stopped
// in the runtime, with their logs (kubectl logs of a finished Job's pod,
// of an evicted pod), until the pod is removed: the workers forget it
// then, and the housekeeping's orphan clean-up or the container GC remove
// them. Its final status stays published, edited by edit, its phase kept
// terminal.
func (s *Syncer) terminateKept(ctx context.Context, pod *v1.Pod, grace *int64, edit func(*v1.PodStatus)) error {
	st, err := s.cfg.Runtime.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return fmt.Errorf("pod %s status: %w", podName(pod), err)
	}
	if err := s.cfg.Runtime.KillPod(ctx, pod, kuberuntime.PodFromStatus(st), grace); err != nil {
		s.cfg.Log.Error(err, "killing finished pod", "pod", podName(pod))
		return err
	}
	s.cfg.Prober.RemovePod(pod.UID)
	final, err := s.cfg.Runtime.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return fmt.Errorf("pod %s status: %w", podName(pod), err)
	}
	if s.cfg.Volumes != nil {
		if err := s.cfg.Volumes.TearDown(pod); err != nil {
			return fmt.Errorf("pod %s volumes: %w", podName(pod), err)
		}
	}
	if s.cfg.Cgroups != nil {
		if err := s.cfg.Cgroups.DestroyPodCgroup(pod); err != nil {
			return fmt.Errorf("pod %s cgroup: %w", podName(pod), err)
		}
	}
	if s.cfg.UserNamespaces != nil {
		s.cfg.UserNamespaces.Release(pod.UID)
	}
	s.cfg.Cache.Set(pod.UID, final, nil, s.cfg.Clock.Now())
	s.publish(pod, final, edit, true)
	s.cfg.Reasons.Remove(pod.UID)
	s.cfg.Log.Info("pod terminated, its containers kept until it is removed", "pod", podName(pod))
	return nil
}
