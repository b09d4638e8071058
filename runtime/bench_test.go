package runtime_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

const (
	benchPods       = 1000
	benchContainers = 3
)

// benchEnv is one fake runtime with 1,000 pods × 3 running containers, made
// through the Manager over gRPC, shared by the benchmarks and closed in
// TestMain.
var benchEnv struct {
	once    sync.Once
	err     error
	fake    *fake.Runtime
	client  *runtime.Client
	manager *runtime.Manager
	pods    []*v1.Pod
	close   func()
}

func benchFixture(b *testing.B) (*runtime.Client, *runtime.Manager, []*v1.Pod) {
	b.Helper()
	benchEnv.once.Do(func() { benchEnv.err = populate() })
	require.NoError(b, benchEnv.err)
	return benchEnv.client, benchEnv.manager, benchEnv.pods
}

func populate() error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "nodekit-bench-")
	if err != nil {
		return err
	}
	f := fake.New(fake.WithImages(testImage, pauseImage))
	endpoint := "unix://" + filepath.Join(dir, "cri.sock")
	stop, err := f.Start(endpoint)
	if err != nil {
		return err
	}
	client, err := runtime.Dial(ctx, endpoint)
	if err != nil {
		return err
	}
	m, err := runtime.NewManager(runtime.ManagerConfig{Runtime: client, Images: client, PodLogsDir: dir, DNS: runtime.HostDNS("", nil, "")})
	if err != nil {
		return err
	}
	benchEnv.fake, benchEnv.client, benchEnv.manager = f, client, m
	benchEnv.close = func() { client.Close(ctx); stop(); f.Close(); os.RemoveAll(dir) }
	for i := 0; i < benchPods; i++ {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", i), Namespace: "bench", UID: types.UID(fmt.Sprintf("uid-%d", i))}}
		for j := 0; j < benchContainers; j++ {
			pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: fmt.Sprintf("c%d", j), Image: testImage, Args: []string{"sleep"}})
		}
		if err := m.SyncPod(ctx, pod, nil, runtime.SyncOptions{}).Error(); err != nil {
			return err
		}
		benchEnv.pods = append(benchEnv.pods, pod)
	}
	return nil
}

func BenchmarkListPodSandbox(b *testing.B) {
	client, _, _ := benchFixture(b)
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
	client, _, _ := benchFixture(b)
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

// BenchmarkGetPodStatus reads one pod's full status (list sandboxes and
// containers by label, then one status call each) among 1,000 pods.
func BenchmarkGetPodStatus(b *testing.B) {
	_, m, pods := benchFixture(b)
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
