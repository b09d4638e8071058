package kuberuntime_test

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

// A pod's life through the runtime manager, here on the in-process fake
// runtime (an agent dials containerd's socket instead).
func Example() {
	ctx := context.Background()
	endpoint, stop, _ := fake.StartTemp(fake.WithImages("nodekit.local/pause:1", "nodekit.local/testbin:1"))
	defer stop()
	client, _ := runtime.Dial(ctx, endpoint)
	defer client.Close(ctx)
	logs, _ := os.MkdirTemp("", "pod-logs")
	defer os.RemoveAll(logs)
	mgr, _ := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: client, PodLogsDir: logs,
		DNS: kuberuntime.HostDNS("", nil, "")})

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "nodekit.local/testbin:1", Args: []string{"sleep"}}}}}
	status, _ := mgr.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	res := mgr.SyncPod(ctx, pod, status, kuberuntime.SyncOptions{})
	fmt.Println(res, res.Err())

	status, _ = mgr.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	fmt.Println(len(status.RunningContainers()), "running")
	final, err := mgr.TerminatePod(ctx, pod, nil)
	fmt.Println(final.FindContainerStatusByName("c").State, err)
	pods, _ := mgr.GetPods(ctx, true)
	fmt.Println(len(pods), "pods left")
	// Output:
	// CreatePodSandbox default/web: ok; StartContainer c: ok <nil>
	// 1 running
	// exited <nil>
	// 0 pods left
}
