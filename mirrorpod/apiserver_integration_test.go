//go:build integration

package mirrorpod_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit-dev/nodekit/internal/testenv"
	"github.com/nodekit-dev/nodekit/mirrorpod"
)

// TestMirrorPodsOnAPIServer: with the node's credentials, under the Node
// authorizer and NodeRestriction (which admit a node's mirror pods only
// when owned by its Node), mirror pods are created, replaced when stale
// and removed when orphaned.
func TestMirrorPodsOnAPIServer(t *testing.T) {
	api := testenv.NeedAPIServer(t)
	ctx := context.Background()
	name := "mirror-" + api.Node
	st := static("h1")
	st.Name, st.Namespace, st.Spec.NodeName = name, "default", api.Node
	cleanup := func() {
		grace := int64(0)
		_ = api.Admin.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	}
	cleanup()
	t.Cleanup(cleanup)
	if _, err := api.Admin.CoreV1().Nodes().Get(ctx, api.Node, metav1.GetOptions{}); err != nil {
		_, err = api.Admin.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: api.Node}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	m, err := mirrorpod.New(mirrorpod.Config{Client: testenv.KubeAPI(t, api.NodeConfig), NodeName: api.Node})
	require.NoError(t, err)
	require.NoError(t, m.Sync(ctx, st))
	got, err := api.Admin.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "h1", got.Annotations[mirrorpod.ConfigMirrorAnnotation])
	assert.Equal(t, "Node", got.OwnerReferences[0].Kind)

	st2 := st.DeepCopy()
	st2.Annotations[mirrorpod.ConfigHashAnnotation] = "h2"
	require.NoError(t, m.Sync(ctx, st2))
	got2, err := api.Admin.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "h2", got2.Annotations[mirrorpod.ConfigMirrorAnnotation])
	assert.NotEqual(t, got.UID, got2.UID, "replaced")

	require.NoError(t, m.DeleteOrphans(ctx, func(string, string) bool { return false }))
	_, err = api.Admin.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	assert.Error(t, err, "orphan removed")
}
