package criconv_test

import (
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit-dev/nodekit/runtime/criconv"
)

// A CRI container status, as ContainerStatus returns it, in nodekit's
// vocabulary: the state, the exit, the image and the sandbox it runs in.
func ExampleContainerStatusFromCRI() {
	s := &runtimeapi.ContainerStatus{
		Id:       "c1",
		Metadata: &runtimeapi.ContainerMetadata{Name: "web"},
		State:    runtimeapi.ContainerState_CONTAINER_EXITED,
		ExitCode: 3,
		Reason:   "Error",
		Image:    &runtimeapi.ImageSpec{Image: "nodekit.local/testbin:1"},
	}
	cs := criconv.ContainerStatusFromCRI(s, "sandbox-1")
	fmt.Println(cs.Name, cs.State, cs.ExitCode, cs.Reason, cs.Image, cs.SandboxID)
	// Output: web exited 3 Error nodekit.local/testbin:1 sandbox-1
}
