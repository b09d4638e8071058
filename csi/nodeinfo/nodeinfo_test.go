package nodeinfo_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/csi"
	"github.com/nodekit-dev/nodekit/csi/nodeinfo"
	"github.com/nodekit-dev/nodekit/kubeapi/clientgo"
)

func TestNodeInfo(t *testing.T) {
	ctx := context.Background()
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "node-uid", Labels: map[string]string{"topology.fake/zone": "a"}}}
	stale := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-1", OwnerReferences: []metav1.OwnerReference{
		{Kind: "Node", Name: "node-1", UID: "an-older-node"}}}}
	client := fake.NewClientset(node, stale)
	m, err := nodeinfo.New(nodeinfo.Config{Client: clientgo.Adapt(client), NodeName: "node-1"})
	require.NoError(t, err)

	require.NoError(t, m.InitializeCSINode(ctx))
	cn, err := client.StorageV1().CSINodes().Get(ctx, "node-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node-1", UID: "node-uid"}}, cn.OwnerReferences,
		"the CSINode of an older Node of the same name is made again")

	require.NoError(t, m.InstallDriver(ctx, "b.csi", csi.DriverInfo{NodeID: "id-b", MaxVolumes: 4, Topology: map[string]string{"topology.fake/zone": "a"}}))
	require.NoError(t, m.InstallDriver(ctx, "a.csi", csi.DriverInfo{NodeID: "id-a"}))
	n, err := client.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.JSONEq(t, `{"a.csi":"id-a","b.csi":"id-b"}`, n.Annotations[nodeinfo.AnnotationNodeID])
	cn, err = client.StorageV1().CSINodes().Get(ctx, "node-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []storagev1.CSINodeDriver{
		{Name: "b.csi", NodeID: "id-b", TopologyKeys: []string{"topology.fake/zone"}, Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](4)}},
		{Name: "a.csi", NodeID: "id-a", TopologyKeys: []string{}}}, cn.Spec.Drivers)

	err = m.InstallDriver(ctx, "c.csi", csi.DriverInfo{NodeID: "id-c", Topology: map[string]string{"topology.fake/zone": "b"}})
	assert.ErrorContains(t, err, `detected topology value collision: driver reported "topology.fake/zone":"b" but existing label is "topology.fake/zone":"a"`)
	assert.ErrorContains(t, m.InstallDriver(ctx, "d.csi", csi.DriverInfo{}), "driverNodeID must not be empty")

	require.NoError(t, m.UninstallDriver(ctx, "b.csi"))
	require.NoError(t, m.UninstallDriver(ctx, "a.csi"))
	n, err = client.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, n.Annotations, nodeinfo.AnnotationNodeID, "gone with its last driver")
	cn, err = client.StorageV1().CSINodes().Get(ctx, "node-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, cn.Spec.Drivers)
}

// TestInstallIntoAStaleCSINode: a driver registering before the CSINode
// of an older Node of the same name was replaced lands in the new one.
func TestInstallIntoAStaleCSINode(t *testing.T) {
	ctx := context.Background()
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "node-uid"}}
	stale := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-1", OwnerReferences: []metav1.OwnerReference{
		{Kind: "Node", Name: "node-1", UID: "an-older-node"}}}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "old.csi", NodeID: "x"}}}}
	client := fake.NewClientset(node, stale)
	m, err := nodeinfo.New(nodeinfo.Config{Client: clientgo.Adapt(client), NodeName: "node-1"})
	require.NoError(t, err)
	require.NoError(t, m.InstallDriver(ctx, "a.csi", csi.DriverInfo{NodeID: "id-a"}))
	require.NoError(t, m.InitializeCSINode(ctx), "later, as the agent's start-up loop")
	cn, err := client.StorageV1().CSINodes().Get(ctx, "node-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, types.UID("node-uid"), cn.OwnerReferences[0].UID)
	require.Len(t, cn.Spec.Drivers, 1)
	assert.Equal(t, "a.csi", cn.Spec.Drivers[0].Name)
}
