package apiserver_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodekit-dev/nodekit/kubeapi/clientgo"
	"github.com/nodekit-dev/nodekit/podsource"
	"github.com/nodekit-dev/nodekit/podsource/apiserver"
)

// The pods bound to node-1, delivered through a mux (here from client-go's
// fake clientset; an agent passes a clientset for its API server).
func Example() {
	client := fake.NewClientset(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"},
		Spec: v1.PodSpec{NodeName: "node-1"}})
	mux := podsource.NewMux(podsource.MuxConfig{})
	src, _ := apiserver.New(apiserver.Config{Client: clientgo.Adapt(client), NodeName: "node-1"}, mux)
	mux.Register(src.Name())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = src.Run(ctx) }()

	u := <-mux.Updates()
	fmt.Println(u.Op, u.Source, u.Pods[0].Name, u.Pods[0].Annotations["kubernetes.io/config.source"])
	cancel()
	<-done
	// Output: ADD api web api
}
