package nodestatus

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// patchStatus PATCHes the status subresource (and metadata) from old to
// updated, as the kubelet's PatchNodeStatus. component-helpers' own
// PatchNodeStatus is not used because it takes no context.
func patchStatus(ctx context.Context, client NodesGetter, old, updated *v1.Node) (*v1.Node, error) {
	patch, err := statusPatch(old, updated)
	if err != nil {
		return nil, err
	}
	return client.Nodes().Patch(ctx, old.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
}

// statusPatch is component-helpers' preparePatchBytesforNodeStatus: a
// strategic-merge patch with the spec left out. Addresses are merged by
// type in the API, which would keep stale ones, so a changed list is left
// out of the diff (a $setElementOrder for it would make the server refuse
// the patch) and sent whole with $patch: replace.
func statusPatch(old, updated *v1.Node) ([]byte, error) {
	oldData, err := json.Marshal(old)
	if err != nil {
		return nil, err
	}
	replace := len(old.Status.Addresses) > 0 && !apiequality.Semantic.DeepEqual(old.Status.Addresses, updated.Status.Addresses)
	diff := updated.DeepCopy()
	diff.Spec = old.Spec
	if replace {
		diff.Status.Addresses = old.Status.Addresses
	}
	newData, err := json.Marshal(diff)
	if err != nil {
		return nil, err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, v1.Node{})
	if err != nil {
		return nil, fmt.Errorf("nodestatus: patch for node %s: %w", old.Name, err)
	}
	if replace {
		return replaceAddresses(patch, updated.Status.Addresses)
	}
	return patch, nil
}

func replaceAddresses(patch []byte, addrs []v1.NodeAddress) ([]byte, error) {
	var p map[string]any
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, err
	}
	status, _ := p["status"].(map[string]any)
	if status == nil {
		status = map[string]any{}
		p["status"] = status
	}
	list := make([]any, 0, len(addrs)+1)
	for _, a := range addrs {
		list = append(list, map[string]any{"type": a.Type, "address": a.Address})
	}
	status["addresses"] = append(list, map[string]any{"$patch": "replace"})
	return json.Marshal(p)
}

// statusChanged is the kubelet's nodeStatusHasChanged: any difference but
// the conditions' heartbeats.
func statusChanged(a, b *v1.NodeStatus) bool {
	strip := func(s *v1.NodeStatus) *v1.NodeStatus {
		c := s.DeepCopy()
		for i := range c.Conditions {
			c.Conditions[i].LastHeartbeatTime = metav1.Time{}
		}
		return c
	}
	return !apiequality.Semantic.DeepEqual(strip(a), strip(b))
}
