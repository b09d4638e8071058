package pleg

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit-dev/nodekit/internal/testenv"
	"github.com/nodekit-dev/nodekit/statuscache"
)

const (
	benchPods       = 1000
	benchContainers = 3
	churnPods       = 100
)

var bench struct {
	once    sync.Once
	node    *testenv.FakeNode
	err     error
	extra   map[int]string // churned pod index -> its extra container
	attempt uint32
}

func benchNode(b *testing.B) *testenv.FakeNode {
	b.Helper()
	bench.once.Do(func() {
		bench.node, bench.err = testenv.NewFakeNode(benchPods, benchContainers)
		bench.extra = map[int]string{}
	})
	require.NoError(b, bench.err)
	return bench.node
}

// BenchmarkBareList is the floor for a relist: the two CRI list calls alone.
func BenchmarkBareList(b *testing.B) {
	n := benchNode(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := n.Client.ListPodSandbox(ctx, nil); err != nil {
			b.Fatal(err)
		}
		if _, err := n.Client.ListContainers(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRelistSteady: 1,000 pods × 3 containers, nothing changes.
func BenchmarkRelistSteady(b *testing.B) {
	n := benchNode(b)
	ctx := context.Background()
	g, err := NewGeneric(Config{Runtime: n.Manager, Cache: statuscache.New()})
	if err != nil {
		b.Fatal(err)
	}
	g.Relist(ctx) // baseline: every pod is new once
	drainAll(g)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g.Relist(ctx)
	}
	b.StopTimer()
	if len(drainAll(g)) != 0 {
		b.Fatal("steady relist produced events")
	}
}

// BenchmarkRelistChurn: 100 of the 1,000 pods change between relists and
// each pod status refresh costs 10 ms of runtime latency (on
// PodSandboxStatus, called once per refresh). Serially that is >= 1 s.
func BenchmarkRelistChurn(b *testing.B) {
	for _, par := range []int{1, 8, 16, 32} {
		b.Run(fmt.Sprintf("parallelism=%d", par), func(b *testing.B) {
			if par == 1 && b.N > 3 {
				b.N = 3 // a second per op: keep the serial baseline short
			}
			n := benchNode(b)
			ctx := context.Background()
			g, err := NewGeneric(Config{Runtime: n.Manager, Cache: statuscache.New(), Parallelism: par})
			require.NoError(b, err)
			g.Relist(ctx)
			drainAll(g)
			n.Fake.SetLatency("PodSandboxStatus", 10*time.Millisecond)
			defer n.Fake.SetLatency("PodSandboxStatus", 0)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				churn(b, n)
				b.StartTimer()
				g.Relist(ctx)
			}
			b.StopTimer()
			drainAll(g)
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/relist")
		})
	}
}

// churn changes 100 pods: it adds a container to those without an extra one
// and removes it from the others, so the number of containers stays bounded.
func churn(b *testing.B, n *testenv.FakeNode) {
	ctx := context.Background()
	extra := bench.extra
	for p := 0; p < churnPods; p++ {
		pod := n.Pods[p*(benchPods/churnPods)]
		idx := p * (benchPods / churnPods)
		if id, ok := extra[idx]; ok {
			if _, err := n.Fake.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
				b.Fatal(err)
			}
			delete(extra, idx)
			continue
		}
		sbs, err := n.Fake.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
			LabelSelector: map[string]string{"io.kubernetes.pod.uid": string(pod.UID)}}})
		if err != nil || len(sbs.Items) != 1 {
			b.Fatalf("sandbox of %s: %v", pod.Name, err)
		}
		bench.attempt++
		r, err := n.Fake.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sbs.Items[0].Id,
			Config: &runtimeapi.ContainerConfig{
				Metadata: &runtimeapi.ContainerMetadata{Name: "extra", Attempt: bench.attempt},
				Image:    &runtimeapi.ImageSpec{Image: testenv.TestImage},
				Labels:   map[string]string{"io.kubernetes.pod.uid": string(pod.UID), "io.kubernetes.container.name": "extra"},
			}})
		if err != nil {
			b.Fatal(err)
		}
		extra[idx] = r.ContainerId
	}
}

func drainAll(g *GenericPLEG) []*PodLifecycleEvent {
	var out []*PodLifecycleEvent
	for {
		select {
		case e := <-g.Watch():
			out = append(out, e)
		default:
			return out
		}
	}
}

// closeBench releases the shared benchmark node (from TestMain).
func closeBench() {
	if bench.node != nil {
		bench.node.Close()
	}
}
