package fieldpath_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit-dev/nodekit/fieldpath"
)

func Example() {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web", "tier": "front"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}}}}}}
	app, _ := fieldpath.PodField(pod, "metadata.labels['app']")
	labels, _ := fieldpath.PodField(pod, "metadata.labels")
	mem, _ := fieldpath.ResourceValue(&pod.Spec.Containers[0],
		&v1.ResourceFieldSelector{Resource: "requests.memory", Divisor: resource.MustParse("1Mi")}, nil)
	fmt.Println(app)
	fmt.Println(labels)
	fmt.Println(mem)
	// Output:
	// web
	// app="web"
	// tier="front"
	// 64
}
