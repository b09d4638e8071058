package kuberuntime

import (
	"context"
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/resources"
)

// ResizeState is where SyncPod reads and records what each running
// container was given (its "actuated" resources), to resize it in place
// when the pod's allocated resources change; *allocation.Manager
// implements it.
type ResizeState interface {
	Actuated(uid types.UID, container string) (v1.ResourceRequirements, bool)
	SetActuated(uid types.UID, container string, r v1.ResourceRequirements) error
}

// KillReasonResize: a container restarted for a resize its resizePolicy
// says needs one.
const KillReasonResize KillReason = "Resize"

// ContainerToResize is a running container whose resources must change.
type ContainerToResize struct {
	Name string
	ID   string
	// Init: Index is into pod.Spec.InitContainers, else Containers.
	Init  bool
	Index int
	// Decrease: the container gets less of something and nothing more;
	// decreases are applied first.
	Decrease bool
}

// ResizeActions are what ComputeResizeActions decides.
type ResizeActions struct {
	// Update are resized in place (CRI UpdateContainerResources), the
	// decreases first.
	Update []ContainerToResize
	// Restart are killed and started again with their new resources: a
	// resource that changed has resizePolicy RestartContainer.
	Restart []ContainerToResize
}

// ComputeResizeActions is the kubelet's computePodResizeAction over the
// running containers of pod (its allocated pod: the spec's resources are
// the allocation) and restartable init containers: a container whose cpu
// or memory request or limit differs from what it was given (actuated) is
// restarted if the changed resource's resizePolicy is RestartContainer,
// else updated in place. A running container with no record of what it
// was given (started before the agent recorded it) is updated in place,
// never restarted. It is a pure function.
func ComputeResizeActions(pod *v1.Pod, status *kc.PodStatus, actuated func(container string) (v1.ResourceRequirements, bool)) ResizeActions {
	var a ResizeActions
	check := func(c *v1.Container, init bool, i int) {
		cs := runningStatus(status, c.Name)
		if cs == nil {
			return
		}
		want := newResizeValues(c.Resources)
		was, known := actuated(c.Name)
		have := newResizeValues(was)
		if known && want == have {
			return
		}
		r := ContainerToResize{Name: c.Name, ID: cs.ID, Init: init, Index: i, Decrease: want.atMost(have)}
		if known && restartFor(c, want, have) {
			a.Restart = append(a.Restart, r)
			return
		}
		a.Update = append(a.Update, r)
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; IsRestartableInitContainer(c) {
			check(c, true, i)
		}
	}
	for i := range pod.Spec.Containers {
		check(&pod.Spec.Containers[i], false, i)
	}
	sort.SliceStable(a.Update, func(i, j int) bool { return a.Update[i].Decrease && !a.Update[j].Decrease })
	return a
}

func runningStatus(s *kc.PodStatus, name string) *kc.ContainerStatus {
	for _, cs := range s.ContainerStatuses {
		if cs.Name == name && cs.State == kc.ContainerStateRunning {
			return cs
		}
	}
	return nil
}

// resizeValues are the kubelet's resourceRequirements: what a resize
// compares, in millicores and bytes.
type resizeValues struct{ cpuRequest, cpuLimit, memRequest, memLimit int64 }

func newResizeValues(r v1.ResourceRequirements) resizeValues {
	return resizeValues{cpuRequest: r.Requests.Cpu().MilliValue(), cpuLimit: r.Limits.Cpu().MilliValue(),
		memRequest: r.Requests.Memory().Value(), memLimit: r.Limits.Memory().Value()}
}

// atMost: no value grows (an added limit counts as a decrease, from none).
func (v resizeValues) atMost(w resizeValues) bool {
	le := func(a, b int64) bool { return b == 0 || (a != 0 && a <= b) }
	return v.cpuRequest <= w.cpuRequest && v.memRequest <= w.memRequest && le(v.cpuLimit, w.cpuLimit) && le(v.memLimit, w.memLimit)
}

// restartFor: a changed resource's resizePolicy is RestartContainer (the
// default is NotRequired).
func restartFor(c *v1.Container, want, have resizeValues) bool {
	changed := map[v1.ResourceName]bool{
		v1.ResourceCPU:    want.cpuRequest != have.cpuRequest || want.cpuLimit != have.cpuLimit,
		v1.ResourceMemory: want.memRequest != have.memRequest || want.memLimit != have.memLimit,
	}
	for _, p := range c.ResizePolicy {
		if changed[p.ResourceName] && p.RestartPolicy == v1.RestartContainer {
			return true
		}
	}
	return false
}

// resizeContainers updates the containers of a in place, in order, and
// records what each was given; the first failure stops it (the next sync
// retries), as the kubelet's updatePodContainerResources.
func (m *Manager) resizeContainers(ctx context.Context, pod *v1.Pod, a ResizeActions, state ResizeState, res *SyncResult) error {
	for _, r := range a.Update {
		c := resizeTarget(pod, r)
		lr := linuxResources(resources.ContainerResources(pod, c, m.cfg.Resources))
		lr.Unified = m.unifiedResources()
		err := m.cfg.Runtime.UpdateContainerResources(ctx, r.ID, &runtimeapi.ContainerResources{Linux: lr})
		if err == nil {
			err = state.SetActuated(pod.UID, c.Name, *c.Resources.DeepCopy())
		}
		if err != nil {
			err = fail(ErrResizePodInPlace, "pod %s: container %s: %w", podRef(pod), c.Name, err)
			res.add(ActionResizePodInPlace, c.Name, err)
			return err
		}
		res.add(ActionResizePodInPlace, c.Name, nil)
	}
	return nil
}

func resizeTarget(pod *v1.Pod, r ContainerToResize) *v1.Container {
	if r.Init {
		return &pod.Spec.InitContainers[r.Index]
	}
	return &pod.Spec.Containers[r.Index]
}

// ResizeInProgress is the kubelet's IsPodResizeInProgress: a running
// container of pod (its allocated pod) was not given what is allocated.
func ResizeInProgress(pod *v1.Pod, status *kc.PodStatus, state ResizeState) bool {
	a := ComputeResizeActions(pod, status, func(name string) (v1.ResourceRequirements, bool) { return state.Actuated(pod.UID, name) })
	return len(a.Update)+len(a.Restart) > 0
}

// restartMessage is the kubelet's kill message for a resize restart.
func restartMessage(name string) string {
	return fmt.Sprintf("Container %s resize requires restart", name)
}

// addResizeActions computes the resize of pod's running containers (none
// without state, or when the pod is killed whole) and adds the restarts to
// a: killed with the kubelet's message, started again in spec order.
// Containers a already kills are left to that.
func (m *Manager) addResizeActions(pod *v1.Pod, status *kc.PodStatus, state ResizeState, a *PodActions) ResizeActions {
	if state == nil || a.KillPod {
		return ResizeActions{}
	}
	r := ComputeResizeActions(pod, status, func(name string) (v1.ResourceRequirements, bool) { return state.Actuated(pod.UID, name) })
	update := r.Update[:0]
	for _, u := range r.Update {
		if _, killed := a.ContainersToKill[u.ID]; !killed {
			update = append(update, u)
		}
	}
	r.Update = update
	for _, rc := range r.Restart {
		if _, killed := a.ContainersToKill[rc.ID]; killed {
			continue
		}
		c := resizeTarget(pod, rc)
		a.ContainersToKill[rc.ID] = ContainerToKill{Name: rc.Name, Container: c, Reason: KillReasonResize, Message: restartMessage(rc.Name)}
		if rc.Init {
			a.InitContainersToStart = insertSorted(a.InitContainersToStart, rc.Index)
		} else {
			a.ContainersToStart = insertSorted(a.ContainersToStart, rc.Index)
		}
	}
	return r
}

func insertSorted(s []int, v int) []int {
	i := sort.SearchInts(s, v)
	if i < len(s) && s[i] == v {
		return s
	}
	return append(s[:i], append([]int{v}, s[i:]...)...)
}
