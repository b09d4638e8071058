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
	"k8s.io/client-go/kubernetes"
)

// patchStatus PATCHes the status subresource (and metadata) from old to
// updated, as the kubelet's PatchNodeStatus: a strategic-merge patch with
// the spec left out, and addresses replaced as a whole (their merge key
// is wrong in the API, so a merge would keep stale ones).
func patchStatus(ctx context.Context, client kubernetes.Interface, old, updated *v1.Node) (*v1.Node, error) {
	oldData, err := json.Marshal(old)
	if err != nil {
		return nil, err
	}
	diff := updated.DeepCopy()
	diff.Spec = old.Spec
	newData, err := json.Marshal(diff)
	if err != nil {
		return nil, err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, v1.Node{})
	if err != nil {
		return nil, fmt.Errorf("nodestatus: patch for node %s: %w", old.Name, err)
	}
	if len(old.Status.Addresses) > 0 && !apiequality.Semantic.DeepEqual(old.Status.Addresses, updated.Status.Addresses) {
		if patch, err = replaceAddresses(patch, updated.Status.Addresses); err != nil {
			return nil, err
		}
	}
	return client.CoreV1().Nodes().Patch(ctx, old.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
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
