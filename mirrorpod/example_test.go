package mirrorpod_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodekit-dev/nodekit/kubeapi/clientgo"
	"github.com/nodekit-dev/nodekit/mirrorpod"
)

// A static pod gets its mirror pod, which the API source then delivers
// back; it is told apart from the pods to run.
func Example() {
	ctx := context.Background()
	client := fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "node-uid"}})
	m, _ := mirrorpod.New(mirrorpod.Config{Client: clientgo.Adapt(client), NodeName: "node-1"})
	static := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-node-1", Namespace: "default",
		Annotations: map[string]string{mirrorpod.ConfigHashAnnotation: "3f2a"}}}
	if err := m.Sync(ctx, static); err != nil {
		fmt.Println(err)
	}
	mirror, _ := client.CoreV1().Pods("default").Get(ctx, "web-node-1", metav1.GetOptions{})
	fmt.Println(mirrorpod.IsMirrorPod(mirror), mirrorpod.IsMirrorPodOf(mirror, static), mirror.OwnerReferences[0].Kind)
	// Output:
	// true true Node
}
