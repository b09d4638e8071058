package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

// FakeNode is a fake runtime served over gRPC on a unix socket, a client and
// a Manager on it, and the pods SyncPod created there.
type FakeNode struct {
	Fake    *fake.Runtime
	Client  *runtime.Client
	Manager *kuberuntime.Manager
	Pods    []*v1.Pod
	dir     string
	stop    func()
}

// NewFakeNode starts a fake runtime with nPods pods of nContainers running
// testbin containers each, created through the Manager as an agent would.
// Close it when done (benchmarks share one across runs).
func NewFakeNode(nPods, nContainers int, opts ...fake.Option) (*FakeNode, error) {
	dir, err := os.MkdirTemp("", "nodekit-fakenode-")
	if err != nil {
		return nil, err
	}
	n := &FakeNode{dir: dir, Fake: fake.New(append([]fake.Option{fake.WithImages(TestImage, PauseImage)}, opts...)...)}
	endpoint := "unix://" + filepath.Join(dir, "cri.sock")
	if n.stop, err = n.Fake.Start(endpoint); err != nil {
		n.Close()
		return nil, err
	}
	ctx := context.Background()
	if n.Client, err = runtime.Dial(ctx, endpoint); err != nil {
		n.Close()
		return nil, err
	}
	n.Manager, err = kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: n.Client, Images: n.Client,
		PodLogsDir: filepath.Join(dir, "logs"), DNS: kuberuntime.HostDNS("", nil, "")})
	if err != nil {
		n.Close()
		return nil, err
	}
	for i := 0; i < nPods; i++ {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", i), Namespace: "bench", UID: types.UID(fmt.Sprintf("uid-%d", i))}}
		for j := 0; j < nContainers; j++ {
			pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: fmt.Sprintf("c%d", j), Image: TestImage, Args: []string{"sleep"}})
		}
		if err := n.Manager.SyncPod(ctx, pod, nil, kuberuntime.SyncOptions{}).Err(); err != nil {
			n.Close()
			return nil, err
		}
		n.Pods = append(n.Pods, pod)
	}
	return n, nil
}

// Close stops the fake runtime and removes its files.
func (n *FakeNode) Close() {
	if n.Client != nil {
		n.Client.Close(context.Background())
	}
	if n.stop != nil {
		n.stop()
	} else {
		n.Fake.Close()
	}
	os.RemoveAll(n.dir)
}
