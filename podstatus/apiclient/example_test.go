package apiclient_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodekit-dev/nodekit/kubeapi/clientgo"
	"github.com/nodekit-dev/nodekit/podstatus"
	"github.com/nodekit-dev/nodekit/podstatus/apiclient"
)

// A node's statuses written to the API server (here client-go's fake
// clientset; an agent passes a clientset with the node's credentials).
func Example() {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"}}
	client := fake.NewClientset(pod)
	api, _ := apiclient.New(clientgo.Adapt(client))
	statuses := podstatus.NewManager(nil)
	writer, _ := podstatus.NewAPIWriter(podstatus.APIWriterConfig{API: api, Statuses: statuses})

	statuses.SetPodStatus(pod, v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.0.0.7"})
	writer.Sync(context.Background()) // an agent runs go writer.Run(ctx)

	got, _ := client.CoreV1().Pods("default").Get(context.Background(), "web", metav1.GetOptions{})
	fmt.Println(got.Status.Phase, got.Status.PodIP)
	for _, a := range client.Actions() {
		resource := a.GetResource().Resource
		if sub := a.GetSubresource(); sub != "" {
			resource += "/" + sub
		}
		fmt.Println(a.GetVerb(), resource)
	}
	// Output:
	// Running 10.0.0.7
	// patch pods/status
	// get pods
}
