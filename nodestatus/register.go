package nodestatus

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Register is the kubelet's tryRegisterWithAPIServer: it creates the Node,
// or, when one of that name exists (an earlier run of this agent, or a
// Node an operator made), takes it over, bringing the kubelet's own labels
// back to what this node says and refreshing its status. The caller's
// extra labels and taints are only set on creation, as the kubelet does.
func (n *Builder) Register(ctx context.Context, client NodesGetter) (*v1.Node, error) {
	node := n.Initial(ctx)
	created, err := client.Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err == nil {
		for _, c := range node.Status.Conditions {
			n.event(c)
		}
		return created, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("nodestatus: registering node %s: %w", n.cfg.NodeName, err)
	}
	existing, err := client.Nodes().Get(ctx, n.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("nodestatus: getting existing node %s: %w", n.cfg.NodeName, err)
	}
	updated := existing.DeepCopy()
	if updated.Labels == nil {
		updated.Labels = map[string]string{}
	}
	for k, v := range n.cfg.defaultLabels() {
		updated.Labels[k] = v
	}
	n.setAttachAnnotation(updated) // the kubelet's reconcileCMADAnnotationWithExistingNode
	n.SetStatus(ctx, updated)
	out, err := patchStatus(ctx, client, existing, updated)
	if err != nil {
		return nil, fmt.Errorf("nodestatus: reconciling existing node %s: %w", n.cfg.NodeName, err)
	}
	return out, nil
}
