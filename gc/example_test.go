package gc_test

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit-dev/nodekit/gc"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

// A pod whose container exited three times: the container GC keeps the
// newest dead instance (for `kubectl logs --previous`) while the pod is
// live, and removes the rest, sandbox included, once it is gone.
func Example() {
	ctx := context.Background()
	endpoint, stop, _ := fake.StartTemp(fake.WithImages(fake.PauseImage, fake.TestbinImage))
	defer stop()
	client, _ := runtime.Dial(ctx, endpoint)
	defer client.Close(ctx)
	logs, _ := os.MkdirTemp("", "pod-logs")
	defer os.RemoveAll(logs)

	labels := map[string]string{kc.LabelPodName: "web", kc.LabelPodNamespace: "default", kc.LabelPodUID: "uid-web"}
	sandbox := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-web"},
		Labels: labels}
	sb, _ := client.RunPodSandbox(ctx, sandbox, "")
	for restart := range 3 {
		id, _ := client.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "app", Attempt: uint32(restart)},
			Image:    &runtimeapi.ImageSpec{Image: fake.TestbinImage}, Args: []string{"exit", "1"},
			Labels: map[string]string{kc.LabelPodName: "web", kc.LabelPodNamespace: "default", kc.LabelPodUID: "uid-web",
				kc.LabelContainerName: "app"},
			Annotations: map[string]string{kc.AnnotationRestartCount: strconv.Itoa(restart)},
		}, sandbox)
		_ = client.StartContainer(ctx, id)
	}

	deleted := false
	containers, _ := gc.NewContainerGC(gc.ContainerConfig{
		Runtime:    client,
		PodState:   gc.PodStateFunc(func(types.UID) bool { return deleted }),
		PodLogsDir: logs,
	})
	res, _ := containers.GarbageCollect(ctx)
	fmt.Printf("live pod: removed %d containers, %d sandboxes\n", len(res.Containers), len(res.Sandboxes))

	deleted = true
	_ = client.StopPodSandbox(ctx, sb)
	res, _ = containers.GarbageCollect(ctx)
	fmt.Printf("deleted pod: removed %d containers, %d sandboxes\n", len(res.Containers), len(res.Sandboxes))
	// Output:
	// live pod: removed 2 containers, 0 sandboxes
	// deleted pod: removed 1 containers, 1 sandboxes
}

// The image GC on a disk said to be 90% full, with no MinAge: the image no
// container uses goes, the sandbox image stays.
func ExampleImageGC() {
	ctx := context.Background()
	endpoint, stop, _ := fake.StartTemp(fake.WithImages(fake.PauseImage, fake.RemovableImage))
	defer stop()
	client, _ := runtime.Dial(ctx, endpoint)
	defer client.Close(ctx)

	policy := gc.DefaultImagePolicy()
	policy.MinAge = 0
	images, _ := gc.NewImageGC(gc.ImageConfig{
		Images: client, Containers: client, Policy: &policy, SandboxImage: fake.PauseImage,
		FsStats: gc.FsStatsFunc(func(string) (capacity, available uint64, err error) { return 100 << 30, 10 << 30, nil }),
	})
	res, err := images.GarbageCollect(ctx)
	fmt.Println("usage:", res.UsagePercent, "wanted:", res.BytesToFree>>30, "GiB")
	for _, im := range res.Removed {
		fmt.Println("removed:", im.RepoTags, im.Reason)
	}
	fmt.Println(err)
	// Output:
	// usage: 90 wanted: 10 GiB
	// removed: [nodekit.local/removable:1] space
	// Failed to garbage collect required amount of images. Attempted to free 10737418240 bytes, but only found 39761949 bytes eligible to free.
}
