package nodekit_test

import (
	"context"
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

// A pod onto a CRI runtime in a few lines: here the in-memory fake, which a
// controller's unit test can use as is; on a node, Dial containerd's socket.
func Example() {
	ctx := context.Background()
	endpoint, stop, err := fake.StartTemp(fake.WithImages("nodekit.local/pause:1", "nodekit.local/testbin:1"))
	if err != nil {
		panic(err)
	}
	defer stop()
	client, err := runtime.Dial(ctx, endpoint) // "unix:///run/containerd/containerd.sock"
	if err != nil {
		panic(err)
	}
	defer client.Close(ctx)
	logs, _ := os.MkdirTemp("", "pod-logs")
	defer os.RemoveAll(logs)
	mgr, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: client, PodLogsDir: logs,
		DNS: kuberuntime.HostDNS("", nil, "")})
	if err != nil {
		panic(err)
	}

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "nodekit.local/testbin:1", Args: []string{"sleep"}}}}}
	status, _ := mgr.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err := mgr.SyncPod(ctx, pod, status, kuberuntime.SyncOptions{}).Err(); err != nil {
		fmt.Println(err) // e.g. CrashLoopBackOff: retried on the next sync
	}
	status, _ = mgr.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	fmt.Println(status.FindContainerStatusByName("c").State)
	_, err = mgr.TerminatePod(ctx, pod, nil)
	fmt.Println(err)
	// Output:
	// running
	// <nil>
}
