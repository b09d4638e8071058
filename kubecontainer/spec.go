package kubecontainer

import v1 "k8s.io/api/core/v1"

// FindContainer is the spec of pod's container called name, among its
// containers, init containers (sidecars included) and ephemeral containers
// (as a v1.Container, the kubelet's GetContainerSpec), or nil.
func FindContainer(pod *v1.Pod, name string) *v1.Container {
	for _, cs := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range cs {
			if cs[i].Name == name {
				return &cs[i]
			}
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if ec := &pod.Spec.EphemeralContainers[i]; ec.Name == name {
			return (*v1.Container)(&ec.EphemeralContainerCommon)
		}
	}
	return nil
}

// ContainerFieldPath is how an event names a container of pod, as the
// kubelet's container references do: spec.initContainers{name} for an
// init container (or sidecar), spec.ephemeralContainers{name} for an
// ephemeral one, spec.containers{name} otherwise.
func ContainerFieldPath(pod *v1.Pod, name string) string {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return "spec.initContainers{" + name + "}"
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return "spec.ephemeralContainers{" + name + "}"
		}
	}
	return "spec.containers{" + name + "}"
}

// ShouldRestart is the kubelet's ContainerShouldRestart (container restart
// rules, beta and on by default since v1.35): whether c, exited with
// exitCode, is restarted. A container with a restartPolicy of its own
// follows its first restartPolicyRules rule that matches the exit code
// (action Restart), else that policy; one without follows the pod's
// restartPolicy (Always when empty).
func ShouldRestart(c *v1.Container, spec *v1.PodSpec, exitCode int32) bool {
	if c.RestartPolicy != nil {
		if rule, ok := matchingRestartRule(c, exitCode); ok && rule.Action == v1.ContainerRestartRuleActionRestart {
			return true
		}
		switch *c.RestartPolicy {
		case v1.ContainerRestartPolicyAlways:
			return true
		case v1.ContainerRestartPolicyOnFailure:
			return exitCode != 0
		case v1.ContainerRestartPolicyNever:
			return false
		}
	}
	switch spec.RestartPolicy {
	case v1.RestartPolicyOnFailure:
		return exitCode != 0
	case v1.RestartPolicyNever:
		return false
	}
	return true
}

// matchingRestartRule is the kubelet's FindMatchingContainerRestartRule:
// the first rule whose exit codes (In or NotIn its values) match.
func matchingRestartRule(c *v1.Container, exitCode int32) (v1.ContainerRestartRule, bool) {
	for _, rule := range c.RestartPolicyRules {
		if rule.ExitCodes == nil {
			continue
		}
		in := false
		for _, v := range rule.ExitCodes.Values {
			if v == exitCode {
				in = true
				break
			}
		}
		switch rule.ExitCodes.Operator {
		case v1.ContainerRestartRuleOnExitCodesOpIn:
			if in {
				return rule, true
			}
		case v1.ContainerRestartRuleOnExitCodesOpNotIn:
			if !in {
				return rule, true
			}
		}
	}
	return v1.ContainerRestartRule{}, false
}
