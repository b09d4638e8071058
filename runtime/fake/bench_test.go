package fake

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// populate creates pods sandboxes with perPod running containers each and
// returns the sandbox IDs.
func populate(b *testing.B, r *Runtime, pods, perPod int) []string {
	b.Helper()
	ctx := context.Background()
	ids := make([]string, 0, pods)
	for i := range pods {
		pc := podConfig(fmt.Sprintf("pod-%d", i))
		sb, err := r.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
		require.NoError(b, err)
		for j := range perPod {
			c, err := r.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
				PodSandboxId: sb.PodSandboxId, SandboxConfig: pc, Config: testbin(fmt.Sprintf("c%d", j))})
			require.NoError(b, err)
			_, err = r.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId})
			require.NoError(b, err)
		}
		ids = append(ids, sb.PodSandboxId)
	}
	return ids
}

func newBench(b *testing.B) *Runtime {
	b.Helper()
	r := New(WithImages(PauseImage, TestbinImage))
	b.Cleanup(func() { _ = r.Close() })
	return r
}

func BenchmarkListContainersInProcess(b *testing.B) {
	r := newBench(b)
	populate(b, r, 1000, 3)
	ctx := context.Background()
	req := &runtimeapi.ListContainersRequest{}
	b.ReportAllocs()
	for b.Loop() {
		resp, err := r.ListContainers(ctx, req)
		if err != nil || len(resp.Containers) != 3000 {
			b.Fatal(err, len(resp.GetContainers()))
		}
	}
}

func BenchmarkListContainersBySandboxInProcess(b *testing.B) {
	r := newBench(b)
	ids := populate(b, r, 1000, 3)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		req := &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: ids[i%len(ids)]}}
		i++
		resp, err := r.ListContainers(ctx, req)
		if err != nil || len(resp.Containers) != 3 {
			b.Fatal(err)
		}
	}
}

func BenchmarkListContainersGRPC(b *testing.B) {
	r := newBench(b)
	populate(b, r, 1000, 3)
	path := filepath.Join(b.TempDir(), "cri.sock")
	stop, err := r.Start("unix://" + path)
	require.NoError(b, err)
	b.Cleanup(stop)
	rs, _ := dial(b, path)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := rs.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
		if err != nil || len(resp.Containers) != 3000 {
			b.Fatal(err)
		}
	}
}

func BenchmarkListPodSandboxGRPC(b *testing.B) {
	r := newBench(b)
	populate(b, r, 1000, 3)
	path := filepath.Join(b.TempDir(), "cri.sock")
	stop, err := r.Start("unix://" + path)
	require.NoError(b, err)
	b.Cleanup(stop)
	rs, _ := dial(b, path)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
		if err != nil || len(resp.Items) != 1000 {
			b.Fatal(err)
		}
	}
}

func BenchmarkContainerLifecycle(b *testing.B) {
	r := newBench(b)
	ctx := context.Background()
	pc := podConfig("p")
	sb, err := r.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
	require.NoError(b, err)
	cfg := testbin("c")
	b.ReportAllocs()
	for b.Loop() {
		c, err := r.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, SandboxConfig: pc, Config: cfg})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}); err != nil {
			b.Fatal(err)
		}
		if _, err := r.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: c.ContainerId, Timeout: 10}); err != nil {
			b.Fatal(err)
		}
		if _, err := r.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: c.ContainerId}); err != nil {
			b.Fatal(err)
		}
	}
}
