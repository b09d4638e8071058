package resources_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodekit-dev/nodekit/resources"
)

// A Burstable pod: its QoS class, and the CPU shares, CFS quota and OOM
// score the kubelet gives its container.
func Example() {
	c := v1.Container{Name: "web", Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("256Mi")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m")},
	}}
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{c}}}
	fmt.Println(resources.ComputePodQOS(pod))
	fmt.Println(resources.MilliCPUToShares(250), resources.MilliCPUToQuota(500, 100000))
	fmt.Println(resources.OOMScoreAdj(pod, &pod.Spec.Containers[0], 4<<30))
	// Output:
	// Burstable
	// 256 50000
	// 938
}
