package nodeagent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/nodeagent"
	"github.com/nodekit-dev/nodekit/nodestatus"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

// A node agent on an in-process fake runtime, running one static pod.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	endpoint, stopFake, err := fake.StartTemp(fake.WithImages(fake.PauseImage, fake.TestbinImage))
	if err != nil {
		panic(err)
	}
	defer stopFake()
	client, err := runtime.Dial(ctx, endpoint)
	if err != nil {
		panic(err)
	}
	defer client.Close(context.Background())
	dir, _ := os.MkdirTemp("", "nodeagent-example-")
	defer os.RemoveAll(dir)
	manifests := filepath.Join(dir, "manifests")
	_ = os.Mkdir(manifests, 0o755)
	_ = os.WriteFile(filepath.Join(manifests, "web.yaml"), []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n"+
		"spec:\n  containers:\n  - {name: c, image: "+fake.TestbinImage+", args: [serve]}\n"), 0o644)

	a, err := nodeagent.New(ctx, nodeagent.Config{NodeName: "n1", NodeIP: "127.0.0.1", RootDir: filepath.Join(dir, "root"),
		PodLogsDir: filepath.Join(dir, "logs"), ManifestPath: manifests, Runtime: client, RuntimeOnHost: ptr.To(false),
		Machine: &nodestatus.MachineInfo{NumCPU: 2, MemoryCapacity: 4 << 30, RootfsCapacity: 50 << 30}})
	if err != nil {
		panic(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- a.Run(runCtx) }()
	for ctx.Err() == nil && !(len(a.Pods()) == 1 && a.Pods()[0].Status.Phase == "Running") {
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Println(a.Pods()[0].Name, a.Pods()[0].Status.Phase)
	stop()
	fmt.Println(<-done)
	// Output:
	// web-n1 Running
	// <nil>
}
