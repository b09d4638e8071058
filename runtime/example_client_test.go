package runtime_test

import (
	"context"
	"errors"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

// CRI calls through the client, here on the in-process fake runtime served
// over gRPC (an agent dials containerd's socket instead).
func Example() {
	ctx := context.Background()
	endpoint, stop, _ := fake.StartTemp(fake.WithImages(fake.PauseImage))
	defer stop()
	client, err := runtime.Dial(ctx, endpoint)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close(ctx)

	v, _ := client.Version(ctx, runtime.CRIVersion)
	fmt.Println(v.RuntimeApiVersion)
	id, _ := client.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-1"}}, "")
	sandboxes, _ := client.ListPodSandbox(ctx, nil)
	fmt.Println(len(sandboxes), "sandbox", sandboxes[0].State)
	_, err = client.PodSandboxStatus(ctx, "no-such-sandbox", false)
	fmt.Println(errors.Is(err, runtime.ErrNotFound))
	fmt.Println(client.StopPodSandbox(ctx, id), client.RemovePodSandbox(ctx, id), client.RemovePodSandbox(ctx, id))
	// Output:
	// v1
	// 1 sandbox SANDBOX_READY
	// true
	// <nil> <nil> <nil>
}
