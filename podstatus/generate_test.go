package podstatus_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/podstatus"
)

var t0 = time.Unix(1700000000, 0)

// runtimeStatus is a pod in the runtime: a ready sandbox "sb" with IP
// 10.0.0.7 (127.0.0.1 never leaves the test) and the given containers,
// newest first.
func runtimeStatus(containers ...*kc.ContainerStatus) *kc.PodStatus {
	for _, c := range containers {
		if c.SandboxID == "" {
			c.SandboxID = "sb"
		}
	}
	return &kc.PodStatus{IPs: []string{"10.0.0.7"}, ContainerStatuses: containers,
		SandboxStatuses: []*kc.SandboxStatus{{ID: "sb", State: kc.SandboxStateReady}}}
}

func ctr(name, id string, state kc.ContainerState, exit, restarts int) *kc.ContainerStatus {
	return &kc.ContainerStatus{Name: name, ID: id, State: state, ExitCode: exit, RestartCount: restarts,
		ImageRef: "sha256:abc", StartedAt: t0, FinishedAt: t0.Add(time.Second)}
}

// probes answers as a prober with a readiness probe that failed for every
// container named in notReady.
type probes struct{ notReady map[string]bool }

func (p probes) UpdatePodStatus(_ *v1.Pod, s *v1.PodStatus) {
	for i := range s.ContainerStatuses {
		c := &s.ContainerStatuses[i]
		started := c.State.Running != nil
		c.Started = &started
		c.Ready = started && !p.notReady[c.Name]
	}
}

func conditions(s v1.PodStatus) map[v1.PodConditionType]string {
	out := map[v1.PodConditionType]string{}
	for _, c := range s.Conditions {
		out[c.Type] = string(c.Status) + " " + c.Reason + " " + c.Message
	}
	return out
}

func TestGenerate(t *testing.T) {
	never, onFailure := v1.RestartPolicyNever, v1.RestartPolicyOnFailure
	web := func(policy v1.RestartPolicy) *v1.Pod {
		p := spec(policy, nil, nil, "web")
		p.UID, p.Spec.Containers[0].Image = "u1", "nginx:1"
		return p
	}
	for _, tc := range []struct {
		name    string
		pod     *v1.Pod
		runtime *kc.PodStatus
		reasons map[string]podstatus.Failure
		probes  podstatus.Probes
		check   func(t *testing.T, s v1.PodStatus)
	}{{
		name: "nothing created yet", pod: web(v1.RestartPolicyAlways),
		check: func(t *testing.T, s v1.PodStatus) {
			assert.Equal(t, v1.PodPending, s.Phase)
			assert.Equal(t, "ContainerCreating", s.ContainerStatuses[0].State.Waiting.Reason)
			assert.Equal(t, "nginx:1", s.ContainerStatuses[0].Image)
			assert.Empty(t, s.PodIP)
			assert.Equal(t, map[v1.PodConditionType]string{
				v1.PodReadyToStartContainers: "False  ", v1.PodInitialized: "True  ",
				v1.ContainersReady: "False ContainersNotReady containers with unready status: [web]",
				v1.PodReady:        "False ContainersNotReady containers with unready status: [web]",
				v1.PodScheduled:    "True  "}, conditions(s))
			assert.Equal(t, []v1.PodConditionType{v1.PodReadyToStartContainers, v1.PodInitialized, v1.PodReady, v1.ContainersReady, v1.PodScheduled},
				[]v1.PodConditionType{s.Conditions[0].Type, s.Conditions[1].Type, s.Conditions[2].Type, s.Conditions[3].Type, s.Conditions[4].Type})
		},
	}, {
		name: "running and ready", pod: web(v1.RestartPolicyAlways),
		runtime: runtimeStatus(ctr("web", "c2", kc.ContainerStateRunning, 0, 1), ctr("web", "c1", kc.ContainerStateExited, 2, 0)),
		check: func(t *testing.T, s v1.PodStatus) {
			c := s.ContainerStatuses[0]
			assert.Equal(t, v1.PodRunning, s.Phase)
			assert.Equal(t, "containerd://c2", c.ContainerID)
			assert.Equal(t, "sha256:abc", c.ImageID)
			assert.EqualValues(t, 1, c.RestartCount)
			assert.True(t, c.Ready)
			assert.True(t, *c.Started)
			require.NotNil(t, c.LastTerminationState.Terminated, "the previous instance")
			assert.EqualValues(t, 2, c.LastTerminationState.Terminated.ExitCode)
			assert.Equal(t, "containerd://c1", c.LastTerminationState.Terminated.ContainerID)
			assert.Equal(t, "10.0.0.7", s.PodIP)
			assert.Equal(t, []v1.HostIP{{IP: "127.0.0.1"}}, s.HostIPs)
			assert.Equal(t, "127.0.0.1", s.HostIP)
			assert.Equal(t, v1.PodQOSBestEffort, s.QOSClass)
			for typ, c := range conditions(s) {
				assert.Equal(t, "True  ", c, typ)
			}
		},
	}, {
		name: "readiness probe failing", pod: web(v1.RestartPolicyAlways), probes: probes{notReady: map[string]bool{"web": true}},
		runtime: runtimeStatus(ctr("web", "c1", kc.ContainerStateRunning, 0, 0)),
		check: func(t *testing.T, s v1.PodStatus) {
			assert.Equal(t, v1.PodRunning, s.Phase)
			assert.False(t, s.ContainerStatuses[0].Ready)
			assert.Equal(t, "False ContainersNotReady containers with unready status: [web]", conditions(s)[v1.PodReady])
		},
	}, {
		name: "crash loop: waiting with the last termination", pod: web(v1.RestartPolicyAlways),
		runtime: runtimeStatus(ctr("web", "c3", kc.ContainerStateExited, 1, 2)),
		reasons: map[string]podstatus.Failure{"web": {Reason: "CrashLoopBackOff", Message: "back-off 20s restarting failed container"}},
		check: func(t *testing.T, s v1.PodStatus) {
			c := s.ContainerStatuses[0]
			assert.Equal(t, &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 20s restarting failed container"}, c.State.Waiting)
			require.NotNil(t, c.LastTerminationState.Terminated)
			assert.EqualValues(t, 1, c.LastTerminationState.Terminated.ExitCode)
			assert.EqualValues(t, 2, c.RestartCount)
			assert.Equal(t, v1.PodRunning, s.Phase)
		},
	}, {
		name: "image pull failed before anything ran", pod: web(v1.RestartPolicyAlways),
		reasons: map[string]podstatus.Failure{"web": {Reason: "ErrImagePull", Message: "not found"}},
		check: func(t *testing.T, s v1.PodStatus) {
			assert.Equal(t, "ErrImagePull", s.ContainerStatuses[0].State.Waiting.Reason)
			assert.Equal(t, v1.PodPending, s.Phase)
		},
	}, {
		name: "Never: a failed container is not restarted, so no waiting reason", pod: web(never),
		runtime: runtimeStatus(ctr("web", "c1", kc.ContainerStateExited, 1, 0)),
		reasons: map[string]podstatus.Failure{"web": {Reason: "CrashLoopBackOff"}},
		check: func(t *testing.T, s v1.PodStatus) {
			require.NotNil(t, s.ContainerStatuses[0].State.Terminated)
			assert.Equal(t, v1.PodFailed, s.Phase)
			assert.Equal(t, "False PodFailed ", conditions(s)[v1.ContainersReady])
		},
	}, {
		name: "OnFailure: exited 0 is done", pod: web(onFailure),
		runtime: runtimeStatus(ctr("web", "c1", kc.ContainerStateExited, 0, 0)),
		reasons: map[string]podstatus.Failure{"web": {Reason: "CreateContainerConfigError"}},
		check: func(t *testing.T, s v1.PodStatus) {
			assert.Equal(t, v1.PodSucceeded, s.Phase)
			assert.Equal(t, "False PodCompleted ", conditions(s)[v1.PodReady])
		},
	}, {
		name: "init containers: regular ones wait with PodInitializing", pod: func() *v1.Pod {
			p := spec(v1.RestartPolicyAlways, []string{"i1", "i2"}, nil, "web")
			return p
		}(),
		runtime: runtimeStatus(ctr("i1", "x1", kc.ContainerStateExited, 0, 0), ctr("i2", "x2", kc.ContainerStateRunning, 0, 0)),
		check: func(t *testing.T, s v1.PodStatus) {
			assert.Equal(t, "PodInitializing", s.ContainerStatuses[0].State.Waiting.Reason)
			assert.True(t, s.InitContainerStatuses[0].Ready, "a completed init container is ready")
			assert.Equal(t, v1.PodPending, s.Phase)
			assert.Equal(t, "False ContainersNotInitialized containers with incomplete status: [i2]", conditions(s)[v1.PodInitialized])
			assert.Equal(t, "True  ", conditions(s)[v1.PodReadyToStartContainers])
		},
	}, {
		name: "init container unknown and failed", pod: spec(v1.RestartPolicyAlways, []string{"i1", "i2"}, nil, "web"),
		runtime: runtimeStatus(ctr("i1", "x1", kc.ContainerStateExited, 3, 0)),
		reasons: map[string]podstatus.Failure{"i1": {Reason: "CrashLoopBackOff"}},
		check: func(t *testing.T, s v1.PodStatus) {
			assert.Equal(t, "CrashLoopBackOff", s.InitContainerStatuses[0].State.Waiting.Reason)
			assert.Equal(t, "PodInitializing", s.InitContainerStatuses[1].State.Waiting.Reason, "the kubelet's default for a pod with init containers")
			assert.Equal(t, "False ContainersNotInitialized containers with incomplete status: [i1 i2]", conditions(s)[v1.PodInitialized])
		},
	}, {
		name: "host network: the pod's IPs are the node's", pod: func() *v1.Pod {
			p := web(v1.RestartPolicyAlways)
			p.Spec.HostNetwork = true
			return p
		}(),
		runtime: func() *kc.PodStatus { s := runtimeStatus(); s.IPs = nil; return s }(),
		check: func(t *testing.T, s v1.PodStatus) {
			assert.Equal(t, "127.0.0.1", s.PodIP)
			assert.Equal(t, []v1.PodIP{{IP: "127.0.0.1"}}, s.PodIPs)
		},
	}, {
		name: "readiness gate without its condition", pod: func() *v1.Pod {
			p := web(v1.RestartPolicyAlways)
			p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/lb"}}
			return p
		}(),
		runtime: runtimeStatus(ctr("web", "c1", kc.ContainerStateRunning, 0, 0)),
		check: func(t *testing.T, s v1.PodStatus) {
			assert.Equal(t, "True  ", conditions(s)[v1.ContainersReady])
			assert.Equal(t, `False ReadinessGatesNotReady corresponding condition of pod readiness gate "example.com/lb" does not exist.`, conditions(s)[v1.PodReady])
		},
	}, {
		name: "QoS class from requests and limits", pod: func() *v1.Pod {
			p := web(v1.RestartPolicyAlways)
			q := v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("64Mi")}
			p.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: q, Limits: q}
			return p
		}(),
		check: func(t *testing.T, s v1.PodStatus) { assert.Equal(t, v1.PodQOSGuaranteed, s.QOSClass) },
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := podstatus.Generate(podstatus.Input{Pod: tc.pod, Runtime: tc.runtime, Reasons: tc.reasons,
				Probes: tc.probes, RuntimeName: "containerd", HostIPs: []string{"127.0.0.1"}})
			tc.check(t, s)
		})
	}
}

// Without a prober, Started and Ready are what the kubelet's UpdatePodStatus
// gives containers without probes: a running sidecar is started and ready;
// a regular init container is started while it runs but ready only once it
// exited 0.
func TestGenerateInitContainerStartedAndReadyWithoutProber(t *testing.T) {
	for _, tc := range []struct {
		name                string
		sidecar             bool
		state               kc.ContainerState
		exit                int
		wantStarted, wantOK bool
	}{
		{"kubelet UpdatePodStatus: regular init container running: started, not ready", false, kc.ContainerStateRunning, 0, true, false},
		{"kubelet UpdatePodStatus: regular init container exited 0: ready", false, kc.ContainerStateExited, 0, false, true},
		{"kubelet UpdatePodStatus: regular init container exited 1: not ready", false, kc.ContainerStateExited, 1, false, false},
		{"kubelet UpdatePodStatus: sidecar running without probes: started and ready", true, kc.ContainerStateRunning, 0, true, true},
		{"kubelet UpdatePodStatus: sidecar exited: not started, not ready", true, kc.ContainerStateExited, 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sidecars, inits []string
			if tc.sidecar {
				sidecars = []string{"i"}
			} else {
				inits = []string{"i"}
			}
			pod := spec(v1.RestartPolicyAlways, inits, sidecars, "web")
			s := podstatus.Generate(podstatus.Input{Pod: pod, Runtime: runtimeStatus(ctr("i", "c1", tc.state, tc.exit, 0)),
				RuntimeName: "containerd", HostIPs: []string{"127.0.0.1"}})
			require.Len(t, s.InitContainerStatuses, 1)
			cs := s.InitContainerStatuses[0]
			require.NotNil(t, cs.Started)
			assert.Equal(t, tc.wantStarted, *cs.Started, "Started")
			assert.Equal(t, tc.wantOK, cs.Ready, "Ready")
		})
	}
}
