package podstatus_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"

	"github.com/nodekit-dev/nodekit/podstatus"
)

// States of a container status, as the API shows them.
func running(name string, started bool) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, Started: &started, Ready: started,
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
}

func exited(name string, code int32) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}}
}

func waiting(name, reason string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason}}}
}

// backingOff: waiting to restart after exiting with code.
func backingOff(name string, code int32) v1.ContainerStatus {
	s := waiting(name, "CrashLoopBackOff")
	s.LastTerminationState.Terminated = &v1.ContainerStateTerminated{ExitCode: code}
	return s
}

func spec(policy v1.RestartPolicy, init []string, sidecars []string, containers ...string) *v1.Pod {
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{Spec: v1.PodSpec{RestartPolicy: policy}}
	for _, n := range init {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, v1.Container{Name: n})
	}
	for _, n := range sidecars {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, v1.Container{Name: n, RestartPolicy: &always})
	}
	for _, n := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: n})
	}
	return pod
}

func TestPhaseFollowsTheKubeletsGetPhase(t *testing.T) {
	type statuses = []v1.ContainerStatus
	for _, tc := range []struct {
		name        string
		pod         *v1.Pod
		init        statuses
		containers  statuses
		initialized bool // a regular container ran in the newest sandbox
		want        v1.PodPhase
	}{
		{"waiting for its first start", spec(v1.RestartPolicyAlways, nil, nil, "c"), nil, statuses{waiting("c", "ContainerCreating")}, false, v1.PodPending},
		{"no status at all", spec(v1.RestartPolicyAlways, nil, nil, "c"), nil, nil, false, v1.PodPending},
		{"running", spec(v1.RestartPolicyAlways, nil, nil, "c"), nil, statuses{running("c", false)}, false, v1.PodRunning},
		{"one running, one unknown", spec(v1.RestartPolicyAlways, nil, nil, "a", "b"), nil, statuses{running("a", true)}, false, v1.PodPending},
		{"Always: exited 0 restarts", spec(v1.RestartPolicyAlways, nil, nil, "c"), nil, statuses{exited("c", 0)}, false, v1.PodRunning},
		{"Always: in back-off", spec(v1.RestartPolicyAlways, nil, nil, "c"), nil, statuses{backingOff("c", 1)}, false, v1.PodRunning},
		{"OnFailure: exited 0", spec(v1.RestartPolicyOnFailure, nil, nil, "c"), nil, statuses{exited("c", 0)}, false, v1.PodSucceeded},
		{"OnFailure: exited 1, restarting", spec(v1.RestartPolicyOnFailure, nil, nil, "c"), nil, statuses{backingOff("c", 1)}, false, v1.PodRunning},
		{"Never: exited 1", spec(v1.RestartPolicyNever, nil, nil, "c"), nil, statuses{exited("c", 1)}, false, v1.PodFailed},
		{"Never: one exited 0, one exited 1", spec(v1.RestartPolicyNever, nil, nil, "a", "b"), nil, statuses{exited("a", 0), exited("b", 1)}, false, v1.PodFailed},
		{"Never: all exited 0", spec(v1.RestartPolicyNever, nil, nil, "a", "b"), nil, statuses{exited("a", 0), exited("b", 0)}, false, v1.PodSucceeded},
		{"Never: one exited, one running", spec(v1.RestartPolicyNever, nil, nil, "a", "b"), nil, statuses{exited("a", 1), running("b", true)}, false, v1.PodRunning},
		{"init container running", spec(v1.RestartPolicyAlways, []string{"i"}, nil, "c"), statuses{running("i", true)}, statuses{waiting("c", "PodInitializing")}, false, v1.PodPending},
		{"init container not created", spec(v1.RestartPolicyAlways, []string{"i"}, nil, "c"), nil, statuses{waiting("c", "PodInitializing")}, false, v1.PodPending},
		{"Never: init container failed", spec(v1.RestartPolicyNever, []string{"i"}, nil, "c"), statuses{exited("i", 1)}, statuses{waiting("c", "PodInitializing")}, false, v1.PodFailed},
		{"OnFailure: init container failed, retried", spec(v1.RestartPolicyOnFailure, []string{"i"}, nil, "c"), statuses{backingOff("i", 1)}, statuses{waiting("c", "PodInitializing")}, false, v1.PodPending},
		{"init done, container running", spec(v1.RestartPolicyAlways, []string{"i"}, nil, "c"), statuses{exited("i", 0)}, statuses{running("c", true)}, true, v1.PodRunning},
		{"sidecar running, not started", spec(v1.RestartPolicyAlways, nil, []string{"s"}, "c"), statuses{running("s", false)}, statuses{waiting("c", "PodInitializing")}, false, v1.PodPending},
		{"sidecar started, container running", spec(v1.RestartPolicyAlways, nil, []string{"s"}, "c"), statuses{running("s", true)}, statuses{running("c", true)}, true, v1.PodRunning},
		{"sidecar restarting after the pod initialized", spec(v1.RestartPolicyAlways, nil, []string{"s"}, "c"), statuses{running("s", false)}, statuses{running("c", true)}, true, v1.PodRunning},
		{"kubelet getPhase: init container status gone after initialization (pendingInitialization gated by podHasInitialized): Running", spec(v1.RestartPolicyAlways, []string{"i"}, []string{"s"}, "c"), statuses{waiting("i", "PodInitializing"), running("s", true)}, statuses{running("c", true)}, true, v1.PodRunning},
		{"kubelet getPhase: regular init container rerun before the pod initialized: Pending", spec(v1.RestartPolicyAlways, []string{"i"}, []string{"s"}, "c"), statuses{running("i", true), running("s", true)}, statuses{waiting("c", "PodInitializing")}, false, v1.PodPending},
		{"Never: sidecar stopped, container exited 0", spec(v1.RestartPolicyNever, nil, []string{"s"}, "c"), statuses{exited("s", 137)}, statuses{exited("c", 0)}, true, v1.PodSucceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &v1.PodStatus{InitContainerStatuses: tc.init, ContainerStatuses: tc.containers}
			assert.Equal(t, tc.want, podstatus.Phase(tc.pod, s, tc.initialized))
		})
	}
}

// TestPhaseWithContainerRestartRules: the kubelet's getPhase with
// ContainerRestartRules (beta, on since v1.35): a container's own
// restartPolicy and rules decide whether its exit ends the pod.
func TestPhaseWithContainerRestartRules(t *testing.T) {
	never := v1.ContainerRestartPolicyNever
	restartOn42 := []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	withRules := func(pod *v1.Pod) *v1.Pod {
		for i := range pod.Spec.Containers {
			pod.Spec.Containers[i].RestartPolicy, pod.Spec.Containers[i].RestartPolicyRules = &never, restartOn42
		}
		for i := range pod.Spec.InitContainers {
			pod.Spec.InitContainers[i].RestartPolicy, pod.Spec.InitContainers[i].RestartPolicyRules = &never, restartOn42
		}
		return pod
	}
	waitingAfter := func(name string, code int32) v1.ContainerStatus {
		s := waiting(name, "CrashLoopBackOff")
		s.LastTerminationState = exited(name, code).State
		return s
	}
	type statuses = []v1.ContainerStatus
	for _, tc := range []struct {
		name       string
		pod        *v1.Pod
		init       statuses
		containers statuses
		want       v1.PodPhase
	}{
		{"pod Always, container Never: its failure ends the pod", withRules(spec(v1.RestartPolicyAlways, nil, nil, "c")), nil,
			statuses{exited("c", 1)}, v1.PodFailed},
		{"pod Always, container Never: exit 0 succeeds", withRules(spec(v1.RestartPolicyAlways, nil, nil, "c")), nil,
			statuses{exited("c", 0)}, v1.PodSucceeded},
		{"exit 42 matches the rule: restarting, Running", withRules(spec(v1.RestartPolicyNever, nil, nil, "c")), nil,
			statuses{exited("c", 42)}, v1.PodRunning},
		{"waiting to restart after 42: Running", withRules(spec(v1.RestartPolicyNever, nil, nil, "c")), nil,
			statuses{waitingAfter("c", 42)}, v1.PodRunning},
		{"init container failed, rule restarts it: Pending", withRules(spec(v1.RestartPolicyNever, []string{"i"}, nil, "c")),
			statuses{exited("i", 42)}, statuses{waiting("c", "PodInitializing")}, v1.PodPending},
		{"init container failed, no rule matches: Failed", withRules(spec(v1.RestartPolicyAlways, []string{"i"}, nil, "c")),
			statuses{exited("i", 3)}, statuses{waiting("c", "PodInitializing")}, v1.PodFailed},
	} {
		s := &v1.PodStatus{InitContainerStatuses: tc.init, ContainerStatuses: tc.containers}
		assert.Equal(t, tc.want, podstatus.Phase(tc.pod, s, false), tc.name)
	}
}
