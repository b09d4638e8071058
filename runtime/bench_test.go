package runtime_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nodekit-dev/nodekit/internal/testenv"
	"github.com/nodekit-dev/nodekit/runtime"
)

const (
	benchPods       = 1000
	benchContainers = 3
)

// benchNode is one fake runtime with 1,000 pods × 3 running containers,
// made through the kuberuntime Manager over gRPC, shared by the benchmarks
// and closed in TestMain.
var benchNode struct {
	once sync.Once
	node *testenv.FakeNode
	err  error
}

func benchFixture(b *testing.B) *runtime.Client {
	b.Helper()
	benchNode.once.Do(func() { benchNode.node, benchNode.err = testenv.NewFakeNode(benchPods, benchContainers) })
	require.NoError(b, benchNode.err)
	return benchNode.node.Client
}

func BenchmarkListPodSandbox(b *testing.B) {
	client := benchFixture(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		items, err := client.ListPodSandbox(ctx, nil)
		if err != nil || len(items) != benchPods {
			b.Fatalf("ListPodSandbox: %d items, %v", len(items), err)
		}
	}
}

func BenchmarkListContainers(b *testing.B) {
	client := benchFixture(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		items, err := client.ListContainers(ctx, nil)
		if err != nil || len(items) != benchPods*benchContainers {
			b.Fatalf("ListContainers: %d items, %v", len(items), err)
		}
	}
}
