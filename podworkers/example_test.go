package podworkers_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/podworkers"
)

// A static pod's manifest is edited: the new version (a new UID) starts
// only once the old one is terminated.
func Example() {
	// The syncer's calls, in order: the workers call it for v2 only once
	// its call terminating v1 has returned.
	calls := make(chan string, 10)
	workers, _ := podworkers.New(podworkers.Config{
		PodSyncer: podworkers.PodSyncerFunc(func(_ context.Context, w podworkers.Work) error {
			calls <- fmt.Sprint(w.Type, " ", w.Pod.UID)
			return nil // a real syncer calls kuberuntime.Manager's SyncPod or TerminatePod
		}),
		Cache: cache{clocktesting.NewFakeClock(t0)},
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go workers.Run(ctx)

	v1Pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "etcd", UID: "v1"}}
	v2Pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "etcd", UID: "v2"}}
	workers.UpdatePod(podworkers.Update{Type: podworkers.SyncPodCreate, Pod: v1Pod})
	fmt.Println(<-calls)
	workers.UpdatePod(podworkers.Update{Type: podworkers.SyncPodCreate, Pod: v2Pod})
	state, _ := workers.State("v2")
	fmt.Println("v2", state)
	workers.UpdatePod(podworkers.Update{Type: podworkers.SyncPodKill, Pod: v1Pod})
	fmt.Println(<-calls)
	fmt.Println(<-calls)
	// Output:
	// SyncPod v1
	// v2 Waiting
	// TerminatePod v1
	// SyncPod v2
}
