package eviction_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodekit-dev/nodekit/eviction"
	"github.com/nodekit-dev/nodekit/nodestatus"
)

// The manager's pressure conditions feed the Node's.
var _ nodestatus.Pressure = (*eviction.Manager)(nil)

// A node low on memory: the pod using most above its request is evicted,
// with the kubelet's message, and BestEffort pods are refused.
func Example() {
	hardFlag := "memory.available<100Mi"
	thresholds, err := eviction.ParseFlags(eviction.Flags{Hard: &hardFlag})
	if err != nil {
		panic(err)
	}
	u := func(v uint64) *uint64 { return &v }
	pod := func(name, request string, workingSet uint64) (*v1.Pod, statsapi.PodStats) {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse(request)}}}}}}
		ws := &statsapi.MemoryStats{WorkingSetBytes: u(workingSet)}
		return p, statsapi.PodStats{PodRef: statsapi.PodReference{UID: string(p.UID)}, Memory: ws,
			Containers: []statsapi.ContainerStats{{Name: "app", Memory: ws}}}
	}
	web, webStats := pod("web", "200Mi", 150<<20)
	batch, batchStats := pod("batch", "100Mi", 300<<20)
	summary := &statsapi.Summary{Pods: []statsapi.PodStats{webStats, batchStats},
		Node: statsapi.NodeStats{Memory: &statsapi.MemoryStats{AvailableBytes: u(50 << 20), WorkingSetBytes: u(8<<30 - 50<<20)}}}

	m, err := eviction.New(eviction.Config{
		Thresholds: thresholds,
		Summary:    eviction.SummaryProviderFunc(func(context.Context) (*statsapi.Summary, error) { return summary, nil }),
		Pods:       eviction.ActivePodsFunc(func() []*v1.Pod { return []*v1.Pod{web, batch} }),
		Killer: eviction.PodKillerFunc(func(_ context.Context, e eviction.Eviction) error {
			var status v1.PodStatus
			e.UpdateStatus(&status) // what the status manager publishes once the pod is killed
			fmt.Printf("evict %s (grace %ds): %s %s %q\n", e.Pod.Name, e.GracePeriodSeconds, status.Phase, status.Reason, status.Message)
			return nil
		}),
	})
	if err != nil {
		panic(err)
	}
	if _, err := m.Synchronize(context.Background()); err != nil {
		panic(err)
	}
	fmt.Println("memory pressure:", m.MemoryPressure())
	bestEffort := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}
	fmt.Printf("%+v\n", m.Admit(bestEffort))
	// Output:
	// evict batch (grace 1s): Failed Evicted "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container app was using 300Mi, request is 100Mi, has larger consumption of memory. "
	// memory pressure: true
	// {Admit:false Reason:Evicted Message:The node had condition: [MemoryPressure]. }
}
