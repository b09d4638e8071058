package podsync_test

import (
	"context"
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/podstatus"
	"github.com/nodekit-dev/nodekit/podsync"
	"github.com/nodekit-dev/nodekit/podworkers"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
	"github.com/nodekit-dev/nodekit/statuscache"
)

// The Syncer's two kinds of Work, as the pod workers call them.
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
	statuses := podstatus.NewManager(nil)
	syncer, _ := podsync.New(podsync.Config{Runtime: mgr, Prober: &noProbes{}, Cache: statuscache.New(),
		Statuses: statuses, Reasons: podstatus.NewReasonCache(), RuntimeName: fake.RuntimeName, HostIPs: []string{"127.0.0.1"}})

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "nodekit.local/testbin:1", Args: []string{"sleep"}}}}}
	fmt.Println(syncer.Sync(ctx, podworkers.Work{Type: podworkers.SyncPod, Pod: pod}))
	status, _ := statuses.PodStatus(pod.UID)
	// noProbes sets neither Started nor Ready, so c runs but is not ready.
	fmt.Println(status.Phase, podstatus.Summarize(status))
	fmt.Println(syncer.Sync(ctx, podworkers.Work{Type: podworkers.TerminatePod, Pod: pod}))
	_, published := statuses.PodStatus(pod.UID)
	fmt.Println("still published:", published)
	// Output:
	// <nil>
	// Running c=running(0)
	// <nil>
	// still published: false
}
