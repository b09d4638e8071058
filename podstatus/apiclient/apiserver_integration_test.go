//go:build integration

package apiclient_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"

	"github.com/nodekit-dev/nodekit/internal/testenv"
	"github.com/nodekit-dev/nodekit/podstatus"
	"github.com/nodekit-dev/nodekit/podstatus/apiclient"
)

// BenchmarkStatusSyncAPIServer: pods/s the status APIWriter writes to the real
// kube-apiserver with the node's credentials (NodeRestriction checks each
// PATCH), every pod's status changed in each batch, as after an outage.
// Each pod costs a PATCH (the kubelet's status manager also GETs each pod
// first): under the kubelet's client limits (--kube-api-qps 50,
// --kube-api-burst 100) that is at most 50 pods/s, the kubelet's 25;
// "unlimited" shows what the apiserver and the APIWriter sustain.
func BenchmarkStatusSyncAPIServer(b *testing.B) {
	api := testenv.NeedAPIServer(b)
	for _, limit := range []struct {
		name  string
		qps   float32
		burst int
	}{{"kubelet-limits", 50, 100}, {"unlimited", -1, 0}} {
		b.Run(limit.name, func(b *testing.B) {
			cfg := rest.CopyConfig(api.NodeConfig)
			cfg.QPS, cfg.Burst = limit.qps, limit.burst
			benchStatusSync(b, api, testenv.KubeAPI(b, cfg))
		})
	}
}

func benchStatusSync(b *testing.B, api *testenv.APIServer, nodeClient apiclient.PodsGetter) {
	ctx := context.Background()
	unlimited := rest.CopyConfig(api.AdminConfig)
	unlimited.QPS = -1 // the set-up's creates and deletes are not what is measured
	admin := testenv.Client(b, unlimited)
	const n = 50
	// A run cut short leaves its pods bound to the node: remove them first.
	grace := int64(0)
	require.NoError(b, admin.CoreV1().Pods("default").DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &grace},
		metav1.ListOptions{LabelSelector: "nodekit.dev/bench=status-sync"}))
	prefix := "bench-" + rand.String(5)
	statuses := podstatus.NewManager(nil)
	var pods []*v1.Pod
	for i := 0; i < n; i++ {
		p, err := admin.CoreV1().Pods("default").Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, i),
			Labels: map[string]string{"nodekit.dev/bench": "status-sync"}},
			Spec: v1.PodSpec{NodeName: api.Node, Containers: []v1.Container{{Name: "c", Image: "nodekit.local/testbin:1"}}}}, metav1.CreateOptions{})
		require.NoError(b, err)
		pods = append(pods, p)
	}
	b.Cleanup(func() {
		for _, p := range pods {
			_ = admin.CoreV1().Pods("default").Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
		}
	})
	client, err := apiclient.New(nodeClient)
	require.NoError(b, err)
	writer, err := podstatus.NewAPIWriter(podstatus.APIWriterConfig{API: client, Statuses: statuses})
	require.NoError(b, err)
	start := time.Unix(1700000000, 0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, p := range pods {
			statuses.SetPodStatus(p, v1.PodStatus{Phase: v1.PodRunning, PodIP: "127.0.0.1", HostIP: "127.0.0.1",
				StartTime: &metav1.Time{Time: start}, ContainerStatuses: []v1.ContainerStatus{{Name: "c", Image: "nodekit.local/testbin:1",
					RestartCount: int32(i), Ready: i%2 == 0, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}})
		}
		if tried := writer.Sync(ctx); tried != n {
			b.Fatalf("batch %d wrote %d pods, want %d", i, tried, n)
		}
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "pods/s")
}
