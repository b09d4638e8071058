package podstatus

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
)

// CheckContainerStateTransition is the kubelet's
// checkContainerStateTransition: a container terminated in old that may
// not run again (kubecontainer.ShouldRestart says no for its exit code)
// must stay terminated in status. A status that breaks this is an error:
// the Manager refuses it. It happens when the runtime no longer has a
// finished pod's container (removed, or an agent restarted) and the
// status generated from what it has shows the container waiting.
func CheckContainerStateTransition(pod *v1.Pod, old, status *v1.PodStatus) error {
	if pod.Spec.RestartPolicy == v1.RestartPolicyAlways || pod.Spec.RestartPolicy == "" {
		return nil
	}
	for _, list := range []struct {
		kind     string
		specs    []v1.Container
		old, new []v1.ContainerStatus
	}{
		{"container", pod.Spec.Containers, old.ContainerStatuses, status.ContainerStatuses},
		{"init container", pod.Spec.InitContainers, old.InitContainerStatuses, status.InitContainerStatuses},
	} {
		for _, o := range list.old {
			t := o.State.Terminated
			c := containerIn(list.specs, o.Name)
			if t == nil || c == nil || kc.ShouldRestart(c, &pod.Spec, t.ExitCode) {
				continue
			}
			for _, n := range list.new {
				if n.Name == o.Name && n.State.Terminated == nil {
					return fmt.Errorf("terminated %s %s attempted illegal transition to non-terminated state", list.kind, n.Name)
				}
			}
		}
	}
	return nil
}
