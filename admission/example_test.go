package admission_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit-dev/nodekit/admission"
)

// activePods is what the pod workers' ActivePods gives.
type activePods []*v1.Pod

func (a activePods) ActivePods() []*v1.Pod { return a }

// A 2-CPU node with one pod requesting 1500m: a second such pod is
// refused with the kubelet's reason and message.
func Example() {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: v1.NodeStatus{Allocatable: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi"), v1.ResourcePods: resource.MustParse("110")}}}
	pod := func(name string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
			Spec: v1.PodSpec{NodeName: "n1", Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1500m")}}}}}}
	}
	pred, err := admission.New(admission.Config{Node: func() (*v1.Node, error) { return node, nil },
		Pods: activePods{pod("running")}})
	if err != nil {
		panic(err)
	}
	r := pred.Admit(pod("new"))
	fmt.Println(r.Admit, r.Reason)
	fmt.Println(r.Message)
	// Output:
	// false OutOfcpu
	// Node didn't have enough resource: cpu, requested: 1500, used: 1500, capacity: 2000
}
