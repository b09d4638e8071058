package nodestatus

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodekit-dev/nodekit/kubeapi/clientgo"
)

func patchedNode() *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{v1.LabelHostname: "node-1"}},
		Spec: v1.NodeSpec{PodCIDR: "10.0.0.0/24",
			Taints: []v1.Taint{{Key: "nodekit.dev/test", Effect: v1.TaintEffectNoSchedule}}},
		Status: v1.NodeStatus{
			Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.0.0.1"}, {Type: v1.NodeHostName, Address: "node-1"}},
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady"},
				{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientMemory"}},
		},
	}
}

// TestStatusPatchAppliedAsAPIServer applies the patch with the API
// server's strategic merge: addresses must come out exactly as reported,
// with no stale entry, and the spec untouched.
func TestStatusPatchAppliedAsAPIServer(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*v1.Node)
		old  func(*v1.Node) // nil: as patchedNode
	}{
		{name: "address changed", mod: func(n *v1.Node) { n.Status.Addresses[0].Address = "127.0.0.2" }},
		{name: "hostname changed", mod: func(n *v1.Node) { n.Status.Addresses[1].Address = "node-1.example" }},
		{name: "address added", mod: func(n *v1.Node) {
			n.Status.Addresses = append(n.Status.Addresses, v1.NodeAddress{Type: v1.NodeExternalIP, Address: "192.0.2.1"})
		}},
		{name: "addresses unchanged, condition changed", mod: func(n *v1.Node) {
			n.Status.Conditions[0] = v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: "KubeletNotReady"}
		}},
		{name: "first addresses", mod: func(*v1.Node) {}, old: func(n *v1.Node) { n.Status.Addresses = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := patchedNode()
			if tc.old != nil {
				tc.old(old)
			}
			updated := patchedNode()
			tc.mod(updated)
			updated.Spec.Unschedulable = true // spec is not ours to patch

			patch, err := statusPatch(old, updated)
			require.NoError(t, err)
			oldJSON, err := json.Marshal(old)
			require.NoError(t, err)
			out, err := strategicpatch.StrategicMergePatch(oldJSON, patch, v1.Node{})
			require.NoError(t, err, "patch %s", patch)
			var got v1.Node
			require.NoError(t, json.Unmarshal(out, &got))

			assert.Equal(t, updated.Status.Addresses, got.Status.Addresses, "patch %s", patch)
			assert.Equal(t, updated.Status.Conditions, got.Status.Conditions)
			assert.Equal(t, old.Spec, got.Spec)
		})
	}
}

// TestRegisterAfterAddressChange goes through the client (the fake's
// strategic merge, close to but not the API server's): a node restarted
// with a new IP or hostname takes over its Node with the new addresses.
func TestRegisterAfterAddressChange(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want []v1.NodeAddress
	}{
		{"IP changed", func(c *Config) { c.NodeIP = "127.0.0.2" },
			[]v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.0.0.2"}, {Type: v1.NodeHostName, Address: "node-1"}}},
		{"hostname changed", func(c *Config) { c.Hostname = "node-1.example" },
			[]v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.0.0.1"}, {Type: v1.NodeHostName, Address: "node-1.example"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			before, _ := newNode(t, nil)
			client := fake.NewClientset(before.Initial(ctx))
			n, _ := newNode(t, tc.mod)
			_, err := n.Register(ctx, clientgo.Adapt(client))
			require.NoError(t, err)
			got, err := client.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, tc.want, got.Status.Addresses)
		})
	}
}

// TestStatusPatchIsTheKubelets: where the addresses stay, the patch is
// component-helpers' (strategicpatch over the whole Node, spec left out).
func TestStatusPatchIsTheKubelets(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*v1.Node)
	}{
		{"nothing", func(*v1.Node) {}},
		{"a heartbeat", func(n *v1.Node) { n.Status.Conditions[0].LastHeartbeatTime = metav1.Now() }},
		{"a condition added", func(n *v1.Node) {
			n.Status.Conditions = append(n.Status.Conditions, v1.NodeCondition{Type: v1.NodeDiskPressure, Status: v1.ConditionFalse})
		}},
		{"a condition removed", func(n *v1.Node) { n.Status.Conditions = n.Status.Conditions[1:] }},
		{"conditions reordered", func(n *v1.Node) {
			n.Status.Conditions[0], n.Status.Conditions[1] = n.Status.Conditions[1], n.Status.Conditions[0]
		}},
		{"images", func(n *v1.Node) {
			n.Status.Images = []v1.ContainerImage{{Names: []string{"registry.k8s.io/pause:3.10"}, SizeBytes: 300000}}
		}},
		{"volumes in use", func(n *v1.Node) { n.Status.VolumesInUse = []v1.UniqueVolumeName{"kubernetes.io/csi/x^y"} }},
		{"capacity", func(n *v1.Node) {
			n.Status.Capacity = v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourcePods: resource.MustParse("110")}
			n.Status.Allocatable = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1900m")}
		}},
		{"node info and endpoints", func(n *v1.Node) {
			n.Status.NodeInfo = v1.NodeSystemInfo{KubeletVersion: "v1.37.2", ContainerRuntimeVersion: "containerd://2.4.2"}
			n.Status.DaemonEndpoints.KubeletEndpoint.Port = 10250
		}},
		{"labels and annotations", func(n *v1.Node) {
			n.Labels = map[string]string{v1.LabelOSStable: "linux"}
			n.Annotations = map[string]string{"volumes.kubernetes.io/controller-managed-attach-detach": "true"}
		}},
		{"everything cleared", func(n *v1.Node) { n.Labels, n.Status = nil, v1.NodeStatus{Addresses: n.Status.Addresses} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := patchedNode()
			updated := patchedNode()
			tc.mod(updated)
			for _, pair := range [][2]*v1.Node{{old, updated}, {updated, old}} {
				patch, err := statusPatch(pair[0], pair[1])
				require.NoError(t, err)
				assert.JSONEq(t, string(kubeletNodePatch(t, pair[0], pair[1])), string(patch))
			}
		})
	}
}

// kubeletNodePatch is component-helpers' preparePatchBytesforNodeStatus.
func kubeletNodePatch(t *testing.T, old, updated *v1.Node) []byte {
	o, err := json.Marshal(old)
	require.NoError(t, err)
	n := updated.DeepCopy()
	n.Spec = old.Spec
	b, err := json.Marshal(n)
	require.NoError(t, err)
	p, err := strategicpatch.CreateTwoWayMergePatch(o, b, v1.Node{})
	require.NoError(t, err)
	return p
}
