package containerlog_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit-dev/nodekit/containerlog"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

// idlePods is the kubelet's default pod limit: one monitor pass over as
// many running containers, none of whose logs (1 KiB each) needs rotating,
// is the log manager's whole cost on an idle full node, every 10s.
const idlePods = 110

// BenchmarkMonitorIdle110 is one pass (RotateAll) over 110 idle
// containers after the first: "manager" on the in-memory fake runtime (the
// manager's own CPU and allocations: a listing, then a stat per
// container), "cri" through *runtime.Client over gRPC to runtime/fake (with
// the CRI calls a real node makes: one listing per pass, where the
// kubelet adds a status per container).
func BenchmarkMonitorIdle110(b *testing.B) {
	b.Run("manager", func(b *testing.B) {
		dir := b.TempDir()
		rt := newFakeRuntime()
		for i := range idlePods {
			id := fmt.Sprintf("c%03d", i)
			rt.add(b, id, filepath.Join(dir, id+".log"))
			rt.write(b, id, make([]byte, 1024))
		}
		benchPass(b, rt)
	})
	b.Run("cri", func(b *testing.B) {
		benchPass(b, criNode(b, idlePods))
	})
}

func benchPass(b *testing.B, rt containerlog.Runtime) {
	m, _ := newManager(b, rt, containerlog.Config{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		rotated, err := m.RotateAll(ctx)
		if err != nil || len(rotated) != 0 {
			b.Fatalf("rotated %v: %v", rotated, err)
		}
	}
}

// criNode is runtime/fake over gRPC with n running containers, one per
// pod, each with a 1 KiB log.
func criNode(b *testing.B, n int) *runtime.Client {
	ctx := context.Background()
	endpoint, stop, err := fake.StartTemp(fake.WithImages(fake.PauseImage, fake.TestbinImage))
	require.NoError(b, err)
	b.Cleanup(stop)
	client, err := runtime.Dial(ctx, endpoint)
	require.NoError(b, err)
	b.Cleanup(func() { client.Close(ctx) })
	logs := b.TempDir()
	for i := range n {
		name := fmt.Sprintf("pod-%03d", i)
		sandbox := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: name},
			LogDirectory: filepath.Join(logs, name)}
		sb, err := client.RunPodSandbox(ctx, sandbox, "")
		require.NoError(b, err)
		id, err := client.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: fake.TestbinImage},
			Args: []string{"serve"}, LogPath: "app/0.log",
		}, sandbox)
		require.NoError(b, err)
		require.NoError(b, client.StartContainer(ctx, id))
		f, err := os.OpenFile(filepath.Join(sandbox.LogDirectory, "app", "0.log"), os.O_WRONLY|os.O_APPEND, 0)
		require.NoError(b, err)
		_, err = f.Write(make([]byte, 1024))
		require.NoError(b, err)
		require.NoError(b, f.Close())
	}
	return client
}
