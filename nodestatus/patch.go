package nodestatus

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit-dev/nodekit/internal/smpdiff"
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

// nodeLists are the merge lists of the part of a Node statusPatch diffs.
var nodeLists = smpdiff.Lists{"status.conditions": {Key: "type"}, "status.addresses": {Key: "type"}}

// statusFields is the part of a Node the agent changes: the labels and
// annotations it reconciles at registration, and the status.
type statusFields struct {
	Metadata struct {
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
	} `json:"metadata"`
	Status v1.NodeStatus `json:"status"`
}

func nodePart(n *v1.Node, status v1.NodeStatus) statusFields {
	var p statusFields
	p.Metadata.Labels, p.Metadata.Annotations, p.Status = n.Labels, n.Annotations, status
	return p
}

// statusPatch is component-helpers' preparePatchBytesforNodeStatus: a
// strategic-merge patch with the spec left out, computed by smpdiff (the
// rest of the metadata is not the agent's to change). Addresses are merged
// by type in the API, which would keep stale ones, so a changed list is
// left out of the diff (a $setElementOrder for it would make the server
// refuse the patch) and sent whole with $patch: replace.
func statusPatch(old, updated *v1.Node) ([]byte, error) {
	replace := len(old.Status.Addresses) > 0 && !apiequality.Semantic.DeepEqual(old.Status.Addresses, updated.Status.Addresses)
	status := updated.Status
	if replace {
		status.Addresses = old.Status.Addresses
	}
	o, err := smpdiff.Object(nodePart(old, old.Status))
	if err != nil {
		return nil, fmt.Errorf("nodestatus: patch for node %s: %w", old.Name, err)
	}
	n, err := smpdiff.Object(nodePart(updated, status))
	if err != nil {
		return nil, fmt.Errorf("nodestatus: patch for node %s: %w", old.Name, err)
	}
	patch := smpdiff.Diff(o, n, nodeLists)
	if replace {
		diff, _ := patch["status"].(map[string]any)
		if diff == nil {
			diff = map[string]any{}
			patch["status"] = diff
		}
		list := make([]any, 0, len(updated.Status.Addresses)+1)
		for _, a := range updated.Status.Addresses {
			list = append(list, map[string]any{"type": a.Type, "address": a.Address})
		}
		diff["addresses"] = append(list, map[string]any{"$patch": "replace"})
	}
	return json.Marshal(patch)
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
