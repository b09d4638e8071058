package clientgo_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodekit-dev/nodekit/kubeapi/clientgo"
)

// A package that takes a kubeapi.Interface, tested on client-go's fake
// clientset: what it writes is in the fake, and its actions recorded.
func ExampleAdapt() {
	fc := fake.NewClientset(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}})
	client := clientgo.Adapt(fc)
	ctx := context.Background()
	pod, _ := client.Pods("default").Get(ctx, "web", metav1.GetOptions{})
	pod.Status.Phase = v1.PodRunning
	_, _ = client.Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	stored, _ := fc.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
	fmt.Println(stored.Status.Phase, len(fc.Actions()))
	// Output: Running 3
}
