package nodeinfo_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodekit-dev/nodekit/csi"
	"github.com/nodekit-dev/nodekit/csi/nodeinfo"
	"github.com/nodekit-dev/nodekit/kubeapi/clientgo"
)

// A registered driver is recorded on the Node and in its CSINode.
func Example() {
	ctx := context.Background()
	client := fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "u1"}})
	info, _ := nodeinfo.New(nodeinfo.Config{Client: clientgo.Adapt(client), NodeName: "node-1"})
	_ = info.InitializeCSINode(ctx)
	_ = info.InstallDriver(ctx, "hostpath.csi.k8s.io", csi.DriverInfo{NodeID: "node-1", MaxVolumes: 10})
	node, _ := client.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	cn, _ := client.StorageV1().CSINodes().Get(ctx, "node-1", metav1.GetOptions{})
	fmt.Println(node.Annotations[nodeinfo.AnnotationNodeID])
	fmt.Println(cn.Spec.Drivers[0].Name, *cn.Spec.Drivers[0].Allocatable.Count)
	// Output:
	// {"hostpath.csi.k8s.io":"node-1"}
	// hostpath.csi.k8s.io 10
}
