package nodestatus

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/kubeapi/clientgo"
)

// kubelet node informer: a label or taint set on the Node in the API
// reaches the node's own view without waiting for a status update; other
// Nodes are not watched.
func TestAPINodeFollowsTheNode(t *testing.T) {
	client := fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}},
		&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "other", Labels: map[string]string{"x": "y"}}})
	a := NewAPINode(clientgo.Adapt(client), "node-1")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.Run(ctx) }()
	defer func() { cancel(); <-done }()
	poll.Eventually(t, func() bool { return a.Get() != nil }, 10*time.Second, time.Millisecond)
	require.Equal(t, "node-1", a.Get().Name)

	n := a.Get().DeepCopy()
	n.Labels = map[string]string{"disk": "ssd"}
	n.Spec.Taints = []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoSchedule}}
	_, err := client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
	poll.Eventually(t, func() bool { return a.Get().Labels["disk"] == "ssd" && len(a.Get().Spec.Taints) == 1 },
		10*time.Second, time.Millisecond)

	require.NoError(t, client.CoreV1().Nodes().Delete(ctx, "node-1", metav1.DeleteOptions{}))
	poll.Eventually(t, func() bool { return a.Get() == nil }, 10*time.Second, time.Millisecond, "deleted: none")
}
