package podsync_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit-dev/nodekit/podstatus"
	"github.com/nodekit-dev/nodekit/podsync"
	"github.com/nodekit-dev/nodekit/podworkers"
)

type usernsLog struct {
	released []types.UID
	kept     [][]types.UID
}

func (u *usernsLog) Release(uid types.UID) { u.released = append(u.released, uid) }
func (u *usernsLog) CleanupOrphans(known []types.UID) error {
	slices.Sort(known)
	u.kept = append(u.kept, known)
	return nil
}

// The kubelet frees a pod's user namespace in SyncTerminatedPod, and the
// ones of pods gone in HandlePodCleanups (known or in the runtime: kept).
func TestUserNamespacesFreedOnTerminationAndHousekeeping(t *testing.T) {
	e := newEnv(t)
	un := &usernsLog{}
	syncer, err := podsync.New(podsync.Config{Runtime: e.mgr, Prober: e.probes, Cache: e.cache, Statuses: e.statuses,
		Reasons: podstatus.NewReasonCache(), HostIPs: []string{"127.0.0.1"}, UserNamespaces: un})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: testImage, Args: []string{"serve"}}}}}
	require.NoError(t, syncer.Sync(ctx, podworkers.Work{Type: podworkers.SyncPod, Pod: pod}))

	require.NoError(t, syncer.Housekeeping(ctx, &workers{known: map[types.UID]bool{"u2": true}}))
	assert.Equal(t, [][]types.UID{{"u1", "u2"}}, un.kept, "the runtime's pod and the workers' are kept")
	assert.Empty(t, un.released)

	require.NoError(t, syncer.Sync(ctx, podworkers.Work{Type: podworkers.TerminatePod, Pod: pod}))
	assert.Equal(t, []types.UID{"u1"}, un.released)
}
