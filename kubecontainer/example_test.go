package kubecontainer_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
)

// The kubelet's labels on a CRI container tell which pod it belongs to.
func Example() {
	labels := map[string]string{kc.LabelPodUID: "uid-1", kc.LabelPodName: "web", kc.LabelPodNamespace: "default"}
	li := kc.ReadLabels(labels, nil)
	fmt.Println(li.PodNamespace+"/"+li.PodName, li.PodUID)

	c := &v1.Container{Name: "web", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	port, _ := kc.ResolvePort(intstr.FromString("http"), c)
	fmt.Println(port, kc.TrimRuntimeType("containerd://abc123"))
	// Output:
	// default/web uid-1
	// 8080 abc123
}
