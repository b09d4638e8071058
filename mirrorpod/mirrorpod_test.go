package mirrorpod_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodekit-dev/nodekit/kubeapi/clientgo"
	"github.com/nodekit-dev/nodekit/mirrorpod"
)

func static(hash string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "etcd-node-1", Namespace: "kube-system", UID: types.UID(hash),
		Annotations: map[string]string{mirrorpod.ConfigHashAnnotation: hash, "kubernetes.io/config.source": "file"}},
		Spec: v1.PodSpec{NodeName: "node-1", Containers: []v1.Container{{Name: "etcd", Image: "etcd:3"}}}}
}

func apiPod(t *testing.T, c kubernetes.Interface, name string) *v1.Pod {
	t.Helper()
	p, err := c.CoreV1().Pods("kube-system").Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return p
}

func TestSyncCreatesReplacesAndDeletesOrphans(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "node-uid"}})
	m, err := mirrorpod.New(mirrorpod.Config{Client: clientgo.Adapt(client), NodeName: "node-1"})
	require.NoError(t, err)

	require.NoError(t, m.Sync(ctx, static("h1")))
	mirror := apiPod(t, client, "etcd-node-1")
	require.NotNil(t, mirror)
	assert.Equal(t, "h1", mirror.Annotations[mirrorpod.ConfigMirrorAnnotation])
	assert.True(t, mirrorpod.IsMirrorPod(mirror))
	assert.True(t, mirrorpod.IsMirrorPodOf(mirror, static("h1")))
	require.Len(t, mirror.OwnerReferences, 1)
	assert.Equal(t, metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "node-1", UID: "node-uid",
		Controller: mirror.OwnerReferences[0].Controller}, mirror.OwnerReferences[0])
	assert.True(t, *mirror.OwnerReferences[0].Controller)

	creates := len(client.Actions())
	require.NoError(t, m.Sync(ctx, static("h1")))
	assert.Len(t, client.Actions(), creates, "current mirror: no API call")

	// The static pod changed: the stale mirror is replaced.
	require.NoError(t, m.Sync(ctx, static("h2")))
	assert.Equal(t, "h2", apiPod(t, client, "etcd-node-1").Annotations[mirrorpod.ConfigMirrorAnnotation])

	// The API source says someone is deleting it: recreated.
	deleting := apiPod(t, client, "etcd-node-1")
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	m.Observe(deleting)
	require.NoError(t, m.Sync(ctx, static("h2")))
	assert.NotNil(t, apiPod(t, client, "etcd-node-1"))

	// Its static pod is gone: the mirror goes.
	require.NoError(t, m.DeleteOrphans(ctx, func(ns, name string) bool { return false }))
	assert.Nil(t, apiPod(t, client, "etcd-node-1"))
	assert.Nil(t, m.Mirror(static("h2")))
}

func TestSyncRefusesToTakeOverAPod(t *testing.T) {
	ctx := context.Background()
	other := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "etcd-node-1", Namespace: "kube-system"}}
	client := fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "node-uid"}}, other)
	m, err := mirrorpod.New(mirrorpod.Config{Client: clientgo.Adapt(client), NodeName: "node-1"})
	require.NoError(t, err)
	assert.ErrorContains(t, m.Sync(ctx, static("h1")), "is not its mirror pod")
	assert.False(t, mirrorpod.IsMirrorPod(apiPod(t, client, "etcd-node-1")), "left alone")
}

func TestNewValidates(t *testing.T) {
	_, err := mirrorpod.New(mirrorpod.Config{NodeName: "n"})
	assert.EqualError(t, err, "mirrorpod: Config.Client is nil")
	_, err = mirrorpod.New(mirrorpod.Config{Client: clientgo.Adapt(fake.NewClientset())})
	assert.EqualError(t, err, "mirrorpod: Config.NodeName is empty")
}

func TestSplitAndStatusTarget(t *testing.T) {
	client := fake.NewClientset()
	m, err := mirrorpod.New(mirrorpod.Config{Client: clientgo.Adapt(client), NodeName: "node-1"})
	require.NoError(t, err)
	st := static("h1")
	mirror := mirrorpod.For(st, "node-1", "node-uid")
	mirror.UID = "mirror-uid"
	api := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default",
		Annotations: map[string]string{mirrorpod.ConfigSourceAnnotation: "api"}}}
	assert.Equal(t, []*v1.Pod{api}, m.Split([]*v1.Pod{mirror, api}, false), "mirror pods are not run")
	got, isStatic := m.StatusTarget(st)
	assert.True(t, isStatic)
	assert.Equal(t, mirror, got, "a static pod's status goes to its mirror pod")
	got, isStatic = m.StatusTarget(api)
	assert.False(t, isStatic)
	assert.Nil(t, got)
	m.Split([]*v1.Pod{mirror}, true)
	assert.Nil(t, m.Mirror(st), "forgotten once removed")
}

// kubelet syncPod: a mirror pod being deleted (kubectl delete, with its
// grace period) is deleted at once and created anew, never adopted while
// it terminates: while it is still there, Sync says so, and the next
// deletes it again and creates it.
func TestSyncNeverAdoptsATerminatingMirrorPod(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "node-uid"}})
	m, err := mirrorpod.New(mirrorpod.Config{Client: clientgo.Adapt(client), NodeName: "node-1"})
	require.NoError(t, err)
	s := static("h1")
	require.NoError(t, m.Sync(ctx, s))
	old := apiPod(t, client, s.Name)
	require.NotNil(t, old)

	// Deleted gracefully by a user; the API server holds it a while yet
	// (the fake ignores the agent's delete meanwhile).
	terminating := old.DeepCopy()
	terminating.DeletionTimestamp = &metav1.Time{}
	_, err = client.CoreV1().Pods(s.Namespace).Update(ctx, terminating, metav1.UpdateOptions{})
	require.NoError(t, err)
	m.Observe(terminating)
	held := true
	client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) { return held, nil, nil })
	err = m.Sync(ctx, s)
	require.ErrorContains(t, err, "already exists", "still there: not adopted")
	assert.Nil(t, m.Mirror(s), "not taken for the current mirror pod")

	held = false
	require.NoError(t, m.Sync(ctx, s), "gone now: created anew")
	created := apiPod(t, client, s.Name)
	require.NotNil(t, created)
	assert.Nil(t, created.DeletionTimestamp)
	assert.Equal(t, created.UID, m.Mirror(s).UID)
}
