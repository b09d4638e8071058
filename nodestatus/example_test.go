package nodestatus_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodekit-dev/nodekit/kubeapi/clientgo"
	"github.com/nodekit-dev/nodekit/nodestatus"
)

// Register a node and read it back as kubectl would.
func Example() {
	ctx := context.Background()
	node, err := nodestatus.New(nodestatus.Config{NodeName: "node-1", NodeIP: "127.0.0.1",
		Machine: nodestatus.MachineInfo{NumCPU: 2, MemoryCapacity: 4 << 30, RootfsCapacity: 50 << 30}})
	if err != nil {
		panic(err)
	}
	client := fake.NewClientset() // a real clientset on a node
	if _, err := node.Register(ctx, clientgo.Adapt(client)); err != nil {
		panic(err)
	}
	n, _ := client.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			fmt.Println(c.Type, c.Status, c.Reason)
		}
	}
	mem := n.Status.Allocatable[v1.ResourceMemory]
	fmt.Println("allocatable memory:", mem.String())
	// Output:
	// Ready True KubeletReady
	// allocatable memory: 3996Mi
}
