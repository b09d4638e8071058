//go:build integration

package kuberuntime_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/internal/testenv"
	"github.com/nodekit-dev/nodekit/kuberuntime"
)

// TestRunAsNonRootOnContainerd: containerd's ImageStatus gives the test
// image's user (none: root), so runAsNonRoot without a runAsUser refuses
// the container; with a non-root runAsUser it runs.
func TestRunAsNonRootOnContainerd(t *testing.T) {
	m, client := newContainerdManager(t, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		user    *int64
		wantErr string
	}{
		{"image user root", nil, "container has runAsNonRoot and image will run as root"},
		{"runAsUser 1234", ptr.To[int64](1234), ""},
	} {
		uid := types.UID("nonroot-" + rand.String(8))
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nonroot", Namespace: "default", UID: uid},
			Spec: v1.PodSpec{HostNetwork: true, TerminationGracePeriodSeconds: new(int64), Containers: []v1.Container{{Name: "c",
				Image: testenv.TestImage, Args: []string{"sleep"}, ImagePullPolicy: v1.PullNever,
				SecurityContext: &v1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: tc.user}}}}}
		cleanupPod(t, m, client, uid)
		res := m.SyncPod(ctx, pod, nil, kuberuntime.SyncOptions{})
		if tc.wantErr == "" {
			assert.NoError(t, res.Err(), tc.name)
			continue
		}
		require.ErrorIs(t, res.Err(), kuberuntime.ErrCreateConfig, tc.name)
		assert.ErrorContains(t, res.Err(), tc.wantErr, tc.name)
	}
}
