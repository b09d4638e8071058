package criconv_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/runtime/criconv"
)

func TestContainerStateFromCRI(t *testing.T) {
	for in, want := range map[runtimeapi.ContainerState]kc.ContainerState{
		runtimeapi.ContainerState_CONTAINER_CREATED: kc.ContainerStateCreated,
		runtimeapi.ContainerState_CONTAINER_RUNNING: kc.ContainerStateRunning,
		runtimeapi.ContainerState_CONTAINER_EXITED:  kc.ContainerStateExited,
		runtimeapi.ContainerState_CONTAINER_UNKNOWN: kc.ContainerStateUnknown,
		runtimeapi.ContainerState(42):               kc.ContainerStateUnknown,
	} {
		assert.Equal(t, want, criconv.ContainerStateFromCRI(in), "%v", in)
	}
}

// The kubelet's labels name the container; times of 0 stay zero.
func TestContainerStatusFromCRI(t *testing.T) {
	cs := criconv.ContainerStatusFromCRI(&runtimeapi.ContainerStatus{
		Id: "c1", Metadata: &runtimeapi.ContainerMetadata{Name: "runtime-name"}, State: runtimeapi.ContainerState_CONTAINER_EXITED,
		CreatedAt: time.Unix(10, 0).UnixNano(), ExitCode: 3,
		Labels: map[string]string{kc.LabelContainerName: "web"},
	}, "sb1")
	assert.Equal(t, "web", cs.Name)
	assert.Equal(t, kc.ContainerStateExited, cs.State)
	assert.Equal(t, 3, cs.ExitCode)
	assert.Equal(t, "sb1", cs.SandboxID)
	assert.True(t, cs.CreatedAt.Equal(time.Unix(10, 0)))
	assert.True(t, cs.StartedAt.IsZero())
}

// A sandbox's IPs are its primary and additional ones, in order.
func TestSandboxStatusFromCRI(t *testing.T) {
	sb := criconv.SandboxStatusFromCRI(&runtimeapi.PodSandboxStatus{
		Id: "sb1", Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Uid: "u", Attempt: 2},
		State:   runtimeapi.PodSandboxState_SANDBOX_READY,
		Network: &runtimeapi.PodSandboxNetworkStatus{Ip: "10.0.0.2", AdditionalIps: []*runtimeapi.PodIP{{Ip: "fd00::2"}}},
	})
	assert.Equal(t, kc.SandboxStateReady, sb.State)
	assert.Equal(t, []string{"10.0.0.2", "fd00::2"}, sb.IPs)
	assert.Equal(t, uint32(2), sb.Attempt)
}
