package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/runtime"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TerminatePod kills the pod and removes it from the runtime, its logs
// included: KillPod with the pod's own grace periods, or
// gracePeriodOverride (an eviction's) if set, then RemovePod. For a
// pod only the runtime still knows (an orphan), pass a pod that carries just
// its name, namespace and UID: with no containers in its spec, each
// container's grace period is the one recorded on it when it was created.
// It returns the pod's status as it was once killed, before the removal:
// the final status an API pod reports (its containers terminated, with
// their exit codes). An error leaves what could not be removed; calling it
// again goes on.
func (m *Manager) TerminatePod(ctx context.Context, pod *v1.Pod, gracePeriodOverride *int64) (*kc.PodStatus, error) {
	st, err := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return nil, err
	}
	spec := pod
	if len(pod.Spec.Containers) == 0 {
		spec = nil
	}
	if err := m.KillPod(ctx, spec, PodFromStatus(st), gracePeriodOverride); err != nil {
		return nil, err
	}
	if st, err = m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace); err != nil {
		return nil, err
	}
	return st, m.RemovePod(ctx, pod.UID)
}

// KillPod stops every running container of the pod, each with its grace
// period (preStop hook first), then stops all its sandboxes. Regular
// containers stop in parallel; a pod with sidecars stops them only once
// every regular container has exited, in reverse spec order, each within
// its own grace period (the kubelet's termination ordering). pod may be nil
// for a pod only the runtime still knows; grace periods then come from the
// containers' annotations, and all stop in parallel. gracePeriodOverride, if
// set, replaces every grace period; as in the kubelet, the preStop hook
// still runs within it and the stop still gets at least
// MinimumGracePeriod. Containers and sandboxes are stopped, not removed:
// call RemovePod when their status is no longer needed.
func (m *Manager) KillPod(ctx context.Context, pod *v1.Pod, running *kc.Pod, gracePeriodOverride *int64) error {
	return m.killPodWithStatus(ctx, pod, running, gracePeriodOverride).Err()
}

func (m *Manager) killPodWithStatus(ctx context.Context, pod *v1.Pod, running *kc.Pod, override *int64) *SyncResult {
	res := &SyncResult{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var names []string
	for _, c := range running.Containers {
		if c.State == kc.ContainerStateRunning {
			names = append(names, c.Name)
		}
	}
	order := newTermOrder(m.cfg.Clock, pod, names)
	for _, c := range running.Containers {
		if c.State != kc.ContainerStateRunning {
			continue
		}
		wg.Add(1)
		go func(c *kc.Container) {
			defer wg.Done()
			var spec *v1.Container
			if pod != nil {
				spec = kc.FindContainer(pod, c.Name)
			}
			err := m.killContainer(ctx, pod, spec, c.ID, KillReasonPodTerminating, override, order)
			mu.Lock()
			res.add(ActionKillContainer, c.Name, err)
			mu.Unlock()
		}(c)
	}
	wg.Wait()
	if res.Err() != nil {
		return res
	}
	for _, s := range running.Sandboxes {
		err := m.cfg.Runtime.StopPodSandbox(ctx, s.ID)
		if err != nil {
			err = fail(ErrKillPodSandbox, "pod %s/%s: sandbox %s: %w", running.Namespace, running.Name, s.ID, err)
		}
		res.add(ActionKillPodSandbox, s.ID, err)
	}
	return res
}

// killContainer is the kubelet's killContainer: the grace period (the
// override, if any, replaces it), the preStop hook within it, then, in a
// pod with sidecars, the wait for the container's turn (order) within what
// is left, and the stop with the rest — never less than MinimumGracePeriod,
// so a container always gets a chance to exit cleanly.
func (m *Manager) killContainer(ctx context.Context, pod *v1.Pod, spec *v1.Container, id string, reason KillReason, override *int64, order *termOrder) error {
	var li kc.LabelInfo
	if pod == nil || spec == nil {
		// Restore what we need from the container's own labels.
		st, err := m.cfg.Runtime.ContainerStatus(ctx, id, false)
		if errors.Is(err, runtime.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fail(ErrKillContainer, "container %s: %w", id, err)
		}
		li = kc.ReadLabels(st.Status.Labels, st.Status.Annotations)
	}
	grace := gracePeriod(pod, spec, li, reason)
	name := li.ContainerName
	if spec != nil {
		name = spec.Name
		m.event(pod, spec, v1.EventTypeNormal, EventKilling, "%s", killMessage(spec.Name, reason))
	}
	if override != nil {
		grace = *override
	}
	preStop := li.PreStop
	if spec != nil && spec.Lifecycle != nil {
		preStop = spec.Lifecycle.PreStop
	}
	if preStop != nil && grace > 0 {
		start := m.cfg.Clock.Now()
		if msg, err := m.runHook(ctx, pod, spec, id, nil, preStop, time.Duration(grace)*time.Second); err != nil {
			m.event(pod, spec, v1.EventTypeWarning, EventFailedPreStop, "PreStopHook failed")
			m.log().Info("preStop hook failed", "container", name, "id", id, "error", err.Error(), "output", msg)
		}
		grace -= int64(m.cfg.Clock.Since(start) / time.Second)
	}
	if order != nil && grace > 0 {
		grace -= int64(order.waitForTurn(name, grace) / time.Second)
	}
	if min := int64(m.cfg.MinimumGracePeriod / time.Second); grace < min {
		grace = min
	}
	if err := m.cfg.Runtime.StopContainer(ctx, id, grace); err != nil {
		return fail(ErrKillContainer, "container %s: %w", id, err)
	}
	if order != nil {
		order.stopped(name)
	}
	return nil
}

// RemovePod removes every container and sandbox of the pod with this UID,
// stopping them first if they still run, and then its log directory under
// PodLogsDir. It is what the kubelet's garbage collection does for a pod
// that was deleted.
func (m *Manager) RemovePod(ctx context.Context, uid types.UID) error {
	sel := map[string]string{kc.LabelPodUID: string(uid)}
	containers, err := m.cfg.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range containers {
		if err := m.cfg.Runtime.RemoveContainer(ctx, c.Id); err != nil {
			errs = append(errs, fail(errRemovePodComponents, "container %s: %w", c.Id, err))
		}
	}
	sandboxes, err := m.cfg.Runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, s := range sandboxes {
		if err := m.cfg.Runtime.StopPodSandbox(ctx, s.Id); err != nil {
			errs = append(errs, fail(errRemovePodComponents, "sandbox %s: %w", s.Id, err))
			continue
		}
		if err := m.cfg.Runtime.RemovePodSandbox(ctx, s.Id); err != nil {
			errs = append(errs, fail(errRemovePodComponents, "sandbox %s: %w", s.Id, err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...) // the logs stay while anything of the pod does
	}
	_, err = m.removePodLogs(func(u types.UID) bool { return u == uid })
	return err
}

// killMessage is the kubelet's Killing event message.
func killMessage(name string, reason KillReason) string {
	switch reason {
	case KillReasonLivenessProbe:
		return fmt.Sprintf("Container %s failed liveness probe, will be restarted", name)
	case KillReasonStartupProbe:
		return fmt.Sprintf("Container %s failed startup probe, will be restarted", name)
	case KillReasonSpecChanged:
		return fmt.Sprintf("Container %s definition changed, will be restarted", name)
	}
	return "Stopping container " + name
}
