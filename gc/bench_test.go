package gc_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/gc"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

// The benchmarks' node: benchPods pods with benchDead dead instances of
// one container each, 10,000 in all (a tenth of the pods under the race
// detector); the pods with an odd index are gone. With the kubelet's
// defaults a pass removes every dead container of the gone pods, all but
// the newest of the live ones', and the gone pods' sandboxes: 9,950
// containers and 50 sandboxes.
var benchPods = map[bool]int{false: 100, true: 10}[raceDetector]

const benchDead = 100

// benchRemovals is what a pass over the benchmark's node removes.
func benchRemovals(pods int) (containers, sandboxes int) {
	gone := pods / 2
	return gone*benchDead + (pods-gone)*(benchDead-1), gone
}

func benchUID(i int) string { return fmt.Sprintf("uid-%03d", i) }

func benchGone(uid types.UID) bool {
	n, _ := strconv.Atoi(string(uid[len("uid-"):]))
	return n%2 == 1
}

// populate makes the benchmark's pods and dead containers on the fake
// runtime directly (not over gRPC: only the GC's calls are measured).
func populate(b *testing.B, rt *fake.Runtime, clk *testingclock.FakeClock) {
	ctx := context.Background()
	cfgs := make([]*runtimeapi.PodSandboxConfig, benchPods)
	sbs := make([]string, benchPods)
	for i := range benchPods {
		uid, name := benchUID(i), fmt.Sprintf("pod-%03d", i)
		cfgs[i] = &runtimeapi.PodSandboxConfig{
			Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: uid},
			Labels:   map[string]string{kc.LabelPodName: name, kc.LabelPodNamespace: "default", kc.LabelPodUID: uid},
		}
		r, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfgs[i]})
		require.NoError(b, err)
		sbs[i] = r.PodSandboxId
	}
	for restart := range benchDead {
		clk.Step(time.Second)
		for i := range benchPods {
			c, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sbs[i], SandboxConfig: cfgs[i],
				Config: &runtimeapi.ContainerConfig{
					Metadata: &runtimeapi.ContainerMetadata{Name: "app", Attempt: uint32(restart)},
					Image:    &runtimeapi.ImageSpec{Image: fake.TestbinImage},
					Args:     []string{"exit", "1"},
					Labels: map[string]string{kc.LabelPodName: cfgs[i].Metadata.Name, kc.LabelPodNamespace: "default",
						kc.LabelPodUID: cfgs[i].Metadata.Uid, kc.LabelContainerName: "app"},
					Annotations: map[string]string{kc.AnnotationRestartCount: strconv.Itoa(restart)},
				}})
			require.NoError(b, err)
			_, err = rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId})
			require.NoError(b, err)
		}
	}
	for i := range benchPods {
		_, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sbs[i]})
		require.NoError(b, err)
	}
}

// clear removes every sandbox, and with them their containers.
func clear(b *testing.B, rt *fake.Runtime) {
	ctx := context.Background()
	sbs, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	require.NoError(b, err)
	for _, s := range sbs.Items {
		_, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: s.Id})
		require.NoError(b, err)
	}
}

// BenchmarkContainerGC is one container GC pass over 10,000 dead
// containers on the fake runtime, through runtime.Client over gRPC: the
// listing, the decision, and the 9,950 container and 50 sandbox removals.
func BenchmarkContainerGC(b *testing.B) {
	clk := testingclock.NewFakeClock(epoch)
	rt := fake.New(fake.WithClock(clk), fake.WithImages(fake.PauseImage, fake.TestbinImage))
	endpoint := "unix://" + filepath.Join(b.TempDir(), "cri.sock")
	stop, err := rt.Start(endpoint)
	require.NoError(b, err)
	b.Cleanup(stop)
	ctx := context.Background()
	client, err := runtime.Dial(ctx, endpoint)
	require.NoError(b, err)
	b.Cleanup(func() { client.Close(ctx) })
	g, err := gc.NewContainerGC(gc.ContainerConfig{Runtime: client, PodState: gc.PodStateFunc(benchGone),
		PodLogsDir: b.TempDir(), Clock: clk})
	require.NoError(b, err)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		clear(b, rt)
		populate(b, rt, clk)
		b.StartTimer()
		res, err := g.GarbageCollect(ctx)
		if wantC, wantS := benchRemovals(benchPods); err != nil || len(res.Containers) != wantC || len(res.Sandboxes) != wantS {
			b.Fatalf("removed %d containers, %d sandboxes: %v", len(res.Containers), len(res.Sandboxes), err)
		}
	}
}

// BenchmarkContainerGCDecision is SelectContainers alone over 10,000 dead
// containers, as BenchmarkContainerGC's without the race detector.
func BenchmarkContainerGCDecision(b *testing.B) {
	const pods = 100
	containers := make([]gc.ContainerInfo, 0, pods*benchDead)
	for restart := range benchDead {
		for i := range pods {
			containers = append(containers, gc.ContainerInfo{ID: fmt.Sprintf("%064x", restart*pods+i), PodUID: types.UID(benchUID(i)),
				Name: "app", SandboxID: "sb-" + benchUID(i), State: kc.ContainerStateExited, CreatedAt: epoch.Add(time.Duration(restart) * time.Second)})
		}
	}
	now := epoch.Add(time.Hour)
	policy := gc.DefaultContainerPolicy()
	b.ReportAllocs()
	for b.Loop() {
		if got := gc.SelectContainers(policy, now, containers, benchGone); len(got) != 9950 {
			b.Fatalf("selected %d", len(got))
		}
	}
}
