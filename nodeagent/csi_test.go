//go:build integration

package nodeagent_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/csi/csitest"
	"github.com/nodekit-dev/nodekit/csi/nodeinfo"
	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/testenv"
	"github.com/nodekit-dev/nodekit/pluginmanager"
)

// TestCSIDriverRegistration: with the node's own credentials on a real
// kube-apiserver, a CSI driver that puts its registration socket in the
// agent's plugins_registry is registered: its node ID in the Node's
// csi.volume.kubernetes.io/nodeid annotation, its topology as a Node
// label, its entry (with its volume limit) in the node's CSINode, owned by
// the Node; when its socket goes, both are removed again.
func TestCSIDriverRegistration(t *testing.T) {
	cd := testenv.NeedContainerd(t)
	api := testenv.NeedAPIServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := api.Admin
	cfg := containerdConfig(t, cd, api.Node)
	cfg.Client = apiClient(t, api.NodeConfig)
	cfg.ManifestPath, cfg.CgroupsPerQOS, cfg.NodeStatusUpdateFrequency = t.TempDir(), ptr.To(false), time.Second
	a, stop := startContainerdAgent(t, ctx, cfg)
	defer stop()
	t.Cleanup(func() {
		_ = admin.CoreV1().Nodes().Delete(context.Background(), api.Node, metav1.DeleteOptions{})
		_ = admin.StorageV1().CSINodes().Delete(context.Background(), api.Node, metav1.DeleteOptions{})
	})
	poll.Eventually(t, func() bool {
		cn, err := admin.StorageV1().CSINodes().Get(ctx, api.Node, metav1.GetOptions{})
		return err == nil && len(cn.OwnerReferences) == 1 && cn.OwnerReferences[0].Kind == "Node"
	}, 30*time.Second, 100*time.Millisecond, "the CSINode made once the Node is registered")

	d, err := csitest.Start(csitest.Config{Name: "fake.csi.nodekit.dev", RegistryDir: filepath.Join(cfg.RootDir, pluginmanager.DefaultDirName),
		EndpointDir: filepath.Join(cfg.RootDir, "plugins", "fake.csi.nodekit.dev"), NodeID: "fake-" + api.Node, MaxVolumes: 16,
		Topology: map[string]string{"topology.fake.csi.nodekit.dev/node": api.Node}})
	require.NoError(t, err)
	defer d.Stop()
	poll.Eventually(t, func() bool { ok, _, told := d.Registered(); return told && ok }, 30*time.Second, 100*time.Millisecond, "the driver told it is registered")
	assert.Equal(t, []string{"fake.csi.nodekit.dev"}, a.CSIDrivers().Drivers())
	node, err := admin.CoreV1().Nodes().Get(ctx, api.Node, metav1.GetOptions{})
	require.NoError(t, err)
	var ids map[string]string
	require.NoError(t, json.Unmarshal([]byte(node.Annotations[nodeinfo.AnnotationNodeID]), &ids))
	assert.Equal(t, map[string]string{"fake.csi.nodekit.dev": "fake-" + api.Node}, ids)
	assert.Equal(t, api.Node, node.Labels["topology.fake.csi.nodekit.dev/node"])
	cn, err := admin.StorageV1().CSINodes().Get(ctx, api.Node, metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, cn.Spec.Drivers, 1)
	assert.Equal(t, "fake-"+api.Node, cn.Spec.Drivers[0].NodeID)
	assert.Equal(t, []string{"topology.fake.csi.nodekit.dev/node"}, cn.Spec.Drivers[0].TopologyKeys)
	assert.Equal(t, int32(16), *cn.Spec.Drivers[0].Allocatable.Count)

	d.Stop()
	poll.Eventually(t, func() bool {
		cn, err := admin.StorageV1().CSINodes().Get(ctx, api.Node, metav1.GetOptions{})
		node, nerr := admin.CoreV1().Nodes().Get(ctx, api.Node, metav1.GetOptions{})
		return err == nil && nerr == nil && len(cn.Spec.Drivers) == 0 && node.Annotations[nodeinfo.AnnotationNodeID] == ""
	}, 30*time.Second, 100*time.Millisecond, "uninstalled once its socket is gone")
	assert.Empty(t, a.CSIDrivers().Drivers())
}
