//go:build integration

package prober_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/nodekit-dev/nodekit/internal/testenv"
	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/prober/probe"
)

// TestExecProbesOnContainerd runs exec probes through CRI ExecSync in a real
// container: exit 0, exit 1, and a command that outlives its timeout.
func TestExecProbesOnContainerd(t *testing.T) {
	cd := testenv.NeedContainerd(t)
	client := cd.Dial(t)
	mgr, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: client, PodLogsDir: t.TempDir()})
	require.NoError(t, err)
	ctx := context.Background()
	uid := types.UID("probe-" + rand.String(8))
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "default", UID: uid},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: testenv.TestImage, Args: []string{"sleep"}}}}}
	t.Cleanup(func() {
		require.NoError(t, mgr.RemovePod(context.Background(), uid))
		testenv.RemovePodCgroup(t, string(uid))
	})
	require.NoError(t, mgr.SyncPod(ctx, pod, nil, kuberuntime.SyncOptions{CgroupParent: testenv.CgroupParent(string(uid))}).Err())
	st, err := mgr.GetPodStatus(ctx, uid, pod.Name, pod.Namespace)
	require.NoError(t, err)
	id := st.FindContainerStatusByName("c").ID

	for _, tc := range []struct {
		name    string
		cmd     []string
		want    probe.Result
		message string
	}{
		{"exit 0", []string{"/testbin", "echo", "fine"}, probe.Success, "fine"},
		{"exit 1", []string{"/testbin", "exit", "1"}, probe.Failure, "exiting with 1"},
		{"outlives the timeout", []string{"/testbin", "sleep", "30"}, probe.Failure, `command "/testbin sleep 30" timed out`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			res, msg, err := probe.Exec(ctx, client, id, tc.cmd, time.Second)
			require.NoError(t, err)
			assert.Equal(t, tc.want, res)
			assert.Contains(t, msg, tc.message)
			assert.Less(t, time.Since(start), 5*time.Second, "cut off at its timeout")
		})
	}
}
