//go:build integration

package nodestatus_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/testenv"
	"github.com/nodekit-dev/nodekit/nodestatus"
)

func ready(node *v1.Node) v1.NodeCondition {
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c
		}
	}
	return v1.NodeCondition{}
}

// TestNodeOnAPIServer: with the node's own credentials (Node authorizer,
// NodeRestriction), on the real kube-apiserver: registration, a status
// change written, the lease renewed and owned by the Node, and the Node
// registered again after an operator deletes it.
func TestNodeOnAPIServer(t *testing.T) {
	api := testenv.NeedAPIServer(t)
	ctx := context.Background()
	cleanup := func() {
		_ = api.Admin.CoreV1().Nodes().Delete(ctx, api.Node, metav1.DeleteOptions{})
		_ = api.Admin.CoordinationV1().Leases(nodestatus.LeaseNamespace).Delete(ctx, api.Node, metav1.DeleteOptions{})
	}
	cleanup()
	t.Cleanup(cleanup)

	mi, err := nodestatus.ReadMachineInfo(nodestatus.MachinePaths{RootDir: t.TempDir()})
	require.NoError(t, err)
	// The check runs on the Reporter's goroutine while the test changes it.
	var checkMu sync.Mutex
	var checkErr error
	setCheck := func(err error) { checkMu.Lock(); checkErr = err; checkMu.Unlock() }
	n, err := nodestatus.New(nodestatus.Config{NodeName: api.Node, NodeIP: "127.0.0.1", Machine: mi,
		Labels:      map[string]string{"nodekit.dev/test": "yes"},
		Taints:      []v1.Taint{{Key: "nodekit.dev/test", Effect: v1.TaintEffectNoSchedule}},
		ReadyChecks: []nodestatus.Check{func(context.Context) error { checkMu.Lock(); defer checkMu.Unlock(); return checkErr }}, ContainerRuntimeVersion: "fake://0.1"})
	require.NoError(t, err)
	r, err := nodestatus.NewReporter(nodestatus.ReporterConfig{Client: testenv.KubeAPI(t, api.NodeConfig), Node: n})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- r.Run(runCtx) }()
	defer func() { stop(); <-done }()
	poll.Eventually(t, r.Registered, 30*time.Second, 50*time.Millisecond)

	node, err := api.Admin.CoreV1().Nodes().Get(ctx, api.Node, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "yes", node.Labels["nodekit.dev/test"])
	assert.Equal(t, api.Node, node.Labels["kubernetes.io/hostname"])
	// The apiserver's TaintNodesByCondition admission adds node.kubernetes.io/not-ready.
	assert.Contains(t, node.Spec.Taints, v1.Taint{Key: "nodekit.dev/test", Effect: v1.TaintEffectNoSchedule})
	assert.Equal(t, v1.NodeAddress{Type: v1.NodeInternalIP, Address: "127.0.0.1"}, node.Status.Addresses[0])
	assert.Equal(t, v1.ConditionTrue, ready(node).Status)
	assert.Equal(t, "fake://0.1", node.Status.NodeInfo.ContainerRuntimeVersion)
	assert.Equal(t, mi.BootID, node.Status.NodeInfo.BootID)
	pods := node.Status.Allocatable[v1.ResourcePods]
	assert.Equal(t, int64(110), pods.Value())

	// A status change is written by the next sync.
	setCheck(errors.New("container runtime is down"))
	require.NoError(t, r.Sync(ctx))
	node, err = api.Admin.CoreV1().Nodes().Get(ctx, api.Node, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1.ConditionFalse, ready(node).Status)
	assert.Equal(t, "KubeletNotReady", ready(node).Reason)
	assert.Equal(t, "container runtime is down", ready(node).Message)
	setCheck(nil)

	// The lease, renewed every second for a 4 s duration here.
	leaseCtx, stopLease := context.WithCancel(ctx)
	leaseDone := make(chan struct{})
	go func() {
		nodestatus.NewLease(testenv.KubeAPI(t, api.NodeConfig), api.Node, 4, nil, nil).Run(leaseCtx)
		close(leaseDone)
	}()
	defer func() { stopLease(); <-leaseDone }()
	var first time.Time
	poll.Eventually(t, func() bool {
		l, err := api.Admin.CoordinationV1().Leases(nodestatus.LeaseNamespace).Get(ctx, api.Node, metav1.GetOptions{})
		if err != nil || l.Spec.RenewTime == nil {
			return false
		}
		if first.IsZero() {
			first = l.Spec.RenewTime.Time
			assert.Equal(t, api.Node, *l.Spec.HolderIdentity)
			assert.Equal(t, int32(4), *l.Spec.LeaseDurationSeconds)
		}
		return l.Spec.RenewTime.After(first) && len(l.OwnerReferences) == 1 && l.OwnerReferences[0].UID == node.UID
	}, 20*time.Second, 100*time.Millisecond, "lease renewed and owned by the Node")

	// An operator deletes the Node: it is registered again.
	require.NoError(t, api.Admin.CoreV1().Nodes().Delete(ctx, api.Node, metav1.DeleteOptions{}))
	require.NoError(t, r.Sync(ctx))
	again, err := api.Admin.CoreV1().Nodes().Get(ctx, api.Node, metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotEqual(t, node.UID, again.UID)
	assert.Equal(t, v1.ConditionTrue, ready(again).Status)
	_, err = api.Admin.CoreV1().Nodes().Get(ctx, "not-"+api.Node, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err))
}
