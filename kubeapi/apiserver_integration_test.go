//go:build integration

package kubeapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/internal/testenv"
)

// Every verb against the real kube-apiserver, in protobuf: a pod's life
// (watched), a node, a lease, a CSINode, a service account's token and
// its review, an access review; and the node's own identity reading its
// Node.
func TestVerbsOnTheAPIServer(t *testing.T) {
	api := testenv.NeedAPIServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs := testenv.KubeAPI(t, api.AdminConfig)
	run := rand.String(6)

	pods := cs.Pods("default")
	pod, err := pods.Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "kubeapi-" + run},
		Spec: v1.PodSpec{NodeName: "kubeapi-nowhere", Containers: []v1.Container{{Name: "c", Image: "x"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + pod.Name, ResourceVersion: pod.ResourceVersion})
	require.NoError(t, err)
	defer w.Stop()
	patched, err := pods.Patch(ctx, pod.Name, types.StrategicMergePatchType, []byte(`{"status":{"phase":"Running"}}`),
		metav1.PatchOptions{}, "status")
	require.NoError(t, err)
	assert.Equal(t, v1.PodRunning, patched.Status.Phase)
	select {
	case ev := <-w.ResultChan():
		require.Equal(t, watch.Modified, ev.Type)
		assert.Equal(t, v1.PodRunning, ev.Object.(*v1.Pod).Status.Phase)
	case <-ctx.Done():
		t.Fatal("no watch event for the status patch")
	}
	patched.Status.Phase = v1.PodSucceeded
	updated, err := pods.UpdateStatus(ctx, patched, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1.PodSucceeded, updated.Status.Phase)
	list, err := cs.Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=kubeapi-nowhere"})
	require.NoError(t, err)
	assert.Contains(t, names(list.Items), pod.Name)
	err = pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0),
		Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID("not-its-uid"))}})
	assert.True(t, apierrors.IsConflict(err), "a UID precondition that fails: %v", err)
	require.NoError(t, pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0),
		Preconditions: &metav1.Preconditions{UID: &pod.UID}}))
	_, err = pods.Get(ctx, pod.Name, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)

	node, err := cs.Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kubeapi-" + run}}, metav1.CreateOptions{})
	require.NoError(t, err)
	node.Labels = map[string]string{"kubeapi": run}
	node, err = cs.Nodes().Update(ctx, node, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, run, node.Labels["kubeapi"])
	require.NoError(t, cs.Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}))

	leases := cs.Leases("kube-node-lease")
	lease, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kubeapi-" + run},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("kubeapi")}}, metav1.CreateOptions{})
	require.NoError(t, err)
	lease.Spec.LeaseDurationSeconds = ptr.To[int32](40)
	lease, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(40), *lease.Spec.LeaseDurationSeconds)
	require.NoError(t, leases.Delete(ctx, lease.Name, metav1.DeleteOptions{}))

	csiNode, err := cs.CSINodes().Create(ctx, &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "kubeapi-" + run},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "kubeapi.nodekit.dev", NodeID: run}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, run, csiNode.Spec.Drivers[0].NodeID)
	require.NoError(t, cs.CSINodes().Delete(ctx, csiNode.Name, metav1.DeleteOptions{}))

	sas := cs.ServiceAccounts("default")
	sa, err := sas.Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "kubeapi-" + run}}, metav1.CreateOptions{})
	require.NoError(t, err)
	defer func() { _ = sas.Delete(context.Background(), sa.Name, metav1.DeleteOptions{}) }()
	tr, err := sas.CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, tr.Status.Token)
	review, err := cs.TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: tr.Status.Token}}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.True(t, review.Status.Authenticated)
	assert.Equal(t, "system:serviceaccount:default:"+sa.Name, review.Status.User.Username)

	sar, err := cs.SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "system:serviceaccount:default:" + sa.Name, ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: "delete", Resource: "nodes"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.False(t, sar.Status.Allowed, "a service account may not delete nodes")

	own, err := testenv.KubeAPI(t, api.NodeConfig).Nodes().Get(ctx, api.Node, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) { // registered or not, the node may read its own Node
		require.NoError(t, err)
		assert.Equal(t, api.Node, own.Name)
	}
}

func names(pods []v1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}
