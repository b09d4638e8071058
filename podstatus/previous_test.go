package podstatus_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/podstatus"
)

// TestGenerateKeepsFromBefore pins what Generate keeps of the status
// published before (Input.Old) or, without one, of the pod's own.
func TestGenerateKeepsFromBefore(t *testing.T) {
	ips := []v1.PodIP{{IP: "10.0.0.7"}}
	// The runtime's view of a stopped pod: the sandbox is not ready and
	// reports no IPs.
	stopped := func(containers ...*kc.ContainerStatus) *kc.PodStatus {
		st := runtimeStatus(containers...)
		st.IPs, st.SandboxStatuses[0].State = nil, kc.SandboxStateNotReady
		return st
	}
	for _, tc := range []struct {
		name     string
		policy   v1.RestartPolicy
		api      v1.PodStatus // the pod's own
		old      *v1.PodStatus
		runtime  *kc.PodStatus
		phase    v1.PodPhase
		reason   string
		podIPs   []v1.PodIP
		notReady bool
	}{{
		name:   "kubelet generateAPIPodStatus: a terminal phase published before is kept (the container restarted under Always)",
		policy: v1.RestartPolicyAlways, old: &v1.PodStatus{Phase: v1.PodSucceeded, PodIPs: ips},
		runtime: runtimeStatus(ctr("web", "c2", kc.ContainerStateRunning, 0, 1)),
		phase:   v1.PodSucceeded, podIPs: ips, notReady: true,
	}, {
		name:   "kubelet generateAPIPodStatus: without a status published before, the API's terminal phase is kept",
		policy: v1.RestartPolicyAlways, api: v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted"},
		runtime: runtimeStatus(ctr("web", "c2", kc.ContainerStateRunning, 0, 1)),
		phase:   v1.PodFailed, reason: "Evicted", podIPs: ips, notReady: true,
	}, {
		name:   "kubelet generateAPIPodStatus: the API's terminal phase wins over another terminal phase (illegal phase transition)",
		policy: v1.RestartPolicyNever, api: v1.PodStatus{Phase: v1.PodFailed},
		old:     &v1.PodStatus{Phase: v1.PodSucceeded},
		runtime: runtimeStatus(ctr("web", "c1", kc.ContainerStateExited, 0, 0)),
		phase:   v1.PodFailed, podIPs: ips, notReady: true,
	}, {
		name:   "kubelet generateAPIPodStatus: the reason of an unchanged phase is kept",
		policy: v1.RestartPolicyNever, old: &v1.PodStatus{Phase: v1.PodRunning, Reason: "R", Message: "m"},
		runtime: runtimeStatus(ctr("web", "c1", kc.ContainerStateRunning, 0, 0)),
		phase:   v1.PodRunning, reason: "R", podIPs: ips,
	}, {
		name:   "a non-terminal phase published before does not hold the pod back",
		policy: v1.RestartPolicyNever, old: &v1.PodStatus{Phase: v1.PodRunning, Reason: "R", PodIPs: ips},
		runtime: stopped(ctr("web", "c1", kc.ContainerStateExited, 0, 0)),
		phase:   v1.PodSucceeded, podIPs: ips, notReady: true,
	}, {
		name:   "kubelet preserveDataFromBeforeStopping / GenericPLEG getPodIPs: a stopped sandbox's IPs published before stay",
		policy: v1.RestartPolicyNever, old: &v1.PodStatus{Phase: v1.PodRunning, PodIPs: ips},
		runtime: stopped(ctr("web", "c1", kc.ContainerStateExited, 1, 0)),
		phase:   v1.PodFailed, podIPs: ips, notReady: true,
	}, {
		name:   "kubelet GenericPLEG getPodIPs: without a status published before, the API's IPs stay",
		policy: v1.RestartPolicyNever, api: v1.PodStatus{Phase: v1.PodRunning, PodIPs: ips},
		runtime: stopped(ctr("web", "c1", kc.ContainerStateExited, 1, 0)),
		phase:   v1.PodFailed, podIPs: ips, notReady: true,
	}, {
		name:   "kubelet GenericPLEG getPodIPs: a ready sandbox without IPs has none (nothing kept)",
		policy: v1.RestartPolicyAlways, old: &v1.PodStatus{Phase: v1.PodRunning, PodIPs: ips},
		runtime: func() *kc.PodStatus {
			st := runtimeStatus(ctr("web", "c1", kc.ContainerStateRunning, 0, 0))
			st.IPs = nil
			return st
		}(),
		phase: v1.PodRunning,
	}, {
		name:   "the runtime's IPs win over those published before",
		policy: v1.RestartPolicyAlways, old: &v1.PodStatus{Phase: v1.PodRunning, PodIPs: []v1.PodIP{{IP: "10.0.0.9"}}},
		runtime: runtimeStatus(ctr("web", "c1", kc.ContainerStateRunning, 0, 0)),
		phase:   v1.PodRunning, podIPs: ips,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			pod := spec(tc.policy, nil, nil, "web")
			pod.Status = tc.api
			s := podstatus.Generate(podstatus.Input{Pod: pod, Runtime: tc.runtime, Old: tc.old})
			assert.Equal(t, tc.phase, s.Phase)
			assert.Equal(t, tc.reason, s.Reason)
			assert.Equal(t, tc.podIPs, s.PodIPs)
			if len(tc.podIPs) > 0 {
				assert.Equal(t, tc.podIPs[0].IP, s.PodIP)
			}
			ready := conditions(s)[v1.PodReady]
			if tc.notReady {
				assert.Regexp(t, "^False", ready, "a terminal pod is not ready")
			}
		})
	}
}
