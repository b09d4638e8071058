package kuberuntime_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/nodekit-dev/nodekit/internal/testenv"
	"github.com/nodekit-dev/nodekit/kuberuntime"
)

const (
	benchPods       = 1000
	benchContainers = 3
)

// benchNode is one fake runtime with 1,000 pods × 3 running containers,
// made through the Manager over gRPC, shared by the benchmarks and closed in
// TestMain.
var benchNode struct {
	once sync.Once
	node *testenv.FakeNode
	err  error
}

func benchFixture(b *testing.B) (*kuberuntime.Manager, []*v1.Pod) {
	b.Helper()
	benchNode.once.Do(func() { benchNode.node, benchNode.err = testenv.NewFakeNode(benchPods, benchContainers) })
	require.NoError(b, benchNode.err)
	return benchNode.node.Manager, benchNode.node.Pods
}

// BenchmarkGetPodStatus reads one pod's full status (list sandboxes and
// containers by label, then one status call each) among 1,000 pods.
func BenchmarkGetPodStatus(b *testing.B) {
	m, pods := benchFixture(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pod := pods[i%len(pods)]
		st, err := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		if err != nil || len(st.ContainerStatuses) != benchContainers || len(st.SandboxStatuses) != 1 {
			b.Fatalf("GetPodStatus: %+v, %v", st, err)
		}
	}
}
