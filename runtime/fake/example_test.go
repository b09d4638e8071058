package fake_test

import (
	"context"
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/runtime/fake"
)

func Example() {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := fake.New(fake.WithClock(clk), fake.WithImages(fake.PauseImage, fake.TestbinImage))
	defer rt.Close()

	pod := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "1"},
	}
	sb, _ := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pod})
	c, _ := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId:  sb.PodSandboxId,
		SandboxConfig: pod,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
			Image:    &runtimeapi.ImageSpec{Image: fake.TestbinImage},
			Args:     []string{"sleep", "5"},
		},
	})
	_, _ = rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId})

	clk.Step(5 * time.Second) // testbin's "sleep 5" exits 0
	st, _ := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.ContainerId})
	fmt.Println(st.Status.State, st.Status.ExitCode, st.Status.Reason)
	// Output: CONTAINER_EXITED 0 Completed
}
