package nodestatus

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
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
