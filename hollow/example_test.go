package hollow_test

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodekit-dev/nodekit/hollow"
)

// Three hollow nodes for a controller's test: pods bound to them run.
// restCfg is an admin's config for the test's API server (envtest's).
func Example() {
	var restCfg *rest.Config // e.g. testEnv.Start()'s
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nodes, err := hollow.New(ctx, hollow.Config{Rest: restCfg, Nodes: 3, ServePorts: true})
	if err != nil {
		panic(err)
	}
	go func() { _ = nodes.Run(ctx) }() // until cancel; the Nodes are then deleted
	client := kubernetes.NewForConfigOrDie(restCfg)
	_, _ = client.CoreV1().Pods("default").Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1.PodSpec{NodeName: nodes.Nodes()[0].Name, Containers: []v1.Container{{Name: "web", Image: "nginx"}}}},
		metav1.CreateOptions{})
	// ... wait for the pod to be Running, as the controller under test would.
}
