package pleg_test

import (
	"context"
	"fmt"
	"os"
	"sort"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/pleg"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
	"github.com/nodekit-dev/nodekit/statuscache"
)

// A relist sees a pod start: events for the pod worker, its status cached.
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
	cache := statuscache.New()
	p, err := pleg.NewGeneric(pleg.Config{Runtime: mgr, Cache: cache}) // or pleg.NewEvented
	if err != nil {
		panic(err)
	}
	p.Relist(ctx) // Run(ctx) relists every second; here one relist at a time

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "nodekit.local/testbin:1", Args: []string{"sleep"}}}}}
	status, _ := mgr.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	mgr.SyncPod(ctx, pod, status, kuberuntime.SyncOptions{})
	p.Relist(ctx)

	var events []string
	for len(p.Watch()) > 0 {
		ev := <-p.Watch()
		events = append(events, fmt.Sprint(ev.ID, " ", ev.Type))
	}
	sort.Strings(events)
	fmt.Println(events)
	st, _ := cache.Get("uid-1")
	fmt.Println(len(st.RunningContainers()), "running in the cache")
	// Output:
	// [uid-1 ContainerStarted uid-1 ContainerStarted]
	// 1 running in the cache
}
