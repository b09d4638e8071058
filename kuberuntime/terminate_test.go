package kuberuntime_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/kuberuntime"
)

func TestTerminatePodKillsAndRemovesSpecAndOrphan(t *testing.T) {
	e := newManagerEnv(t)
	for i, tc := range []struct {
		name   string
		asSeen func(*v1.Pod) *v1.Pod // what the caller passes to TerminatePod
	}{
		{"with its spec", func(p *v1.Pod) *v1.Pod { return p }},
		{"orphan: name, namespace and UID only", func(p *v1.Pod) *v1.Pod {
			return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := podSpec(fmt.Sprintf("term-%d", i), v1.RestartPolicyAlways,
				v1.Container{Name: "c", Image: testImage, Args: []string{"serve"}})
			_, st := e.sync(pod, nil)
			require.Len(t, st.RunningContainers(), 1)
			logs, err := kuberuntime.PodLogsDir(e.logs, pod)
			require.NoError(t, err)
			require.DirExists(t, logs)

			final, err := e.m.TerminatePod(e.ctx, tc.asSeen(pod), nil)
			require.NoError(t, err)
			require.Len(t, final.ContainerStatuses, 1, "the final status: killed, not yet removed")
			assert.Equal(t, kc.ContainerStateExited, final.ContainerStatuses[0].State)
			st, err = e.m.GetPodStatus(e.ctx, pod.UID, pod.Name, pod.Namespace)
			require.NoError(t, err)
			assert.Empty(t, st.ContainerStatuses, "containers removed")
			assert.Empty(t, st.SandboxStatuses, "sandboxes removed")
			_, err = os.Stat(logs)
			assert.True(t, os.IsNotExist(err), "log directory %s removed: %v", filepath.Base(logs), err)
			// Again: nothing left to do, no error.
			_, err = e.m.TerminatePod(e.ctx, tc.asSeen(pod), nil)
			require.NoError(t, err)
		})
	}
}

func TestGetPodsOwnPodsOnly(t *testing.T) {
	e := newManagerEnv(t)
	mine, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: e.client, Images: e.client, Clock: e.clock,
		PodLogsDir: t.TempDir(), DNS: kuberuntime.HostDNS("", nil, ""),
		SandboxLabels: map[string]string{"nodekit.dev/node": "a"}, OwnPodsOnly: true})
	require.NoError(t, err)
	_, err = kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: e.client, Images: e.client, OwnPodsOnly: true})
	require.ErrorContains(t, err, "SandboxLabels")

	ours := podSpec("ours", v1.RestartPolicyAlways, v1.Container{Name: "c", Image: testImage, Args: []string{"serve"}})
	theirs := podSpec("theirs", v1.RestartPolicyAlways, v1.Container{Name: "c", Image: testImage, Args: []string{"serve"}})
	st, err := mine.GetPodStatus(e.ctx, ours.UID, ours.Name, ours.Namespace)
	require.NoError(t, err)
	require.NoError(t, mine.SyncPod(e.ctx, ours, st, kuberuntime.SyncOptions{}).Err())
	e.sync(theirs, nil) // the unlabelled manager: another agent's pod

	uids := func(m *kuberuntime.Manager, all bool) []string {
		pods, err := m.GetPods(e.ctx, all)
		require.NoError(t, err)
		var out []string
		for _, p := range pods {
			out = append(out, string(p.ID))
			for _, c := range p.Containers {
				out = append(out, string(p.ID)+"/"+c.Name)
			}
		}
		return out
	}
	for _, all := range []bool{true, false} {
		assert.Equal(t, []string{"uid-ours", "uid-ours/c"}, uids(mine, all), "all=%v", all)
		assert.Equal(t, []string{"uid-ours", "uid-ours/c", "uid-theirs", "uid-theirs/c"}, uids(e.m, all), "all=%v", all)
	}
	// A stopped pod of ours is still ours with all=true, and gone with all=false.
	st, err = mine.GetPodStatus(e.ctx, ours.UID, ours.Name, ours.Namespace)
	require.NoError(t, err)
	require.NoError(t, mine.KillPod(e.ctx, ours, kuberuntime.PodFromStatus(st), nil))
	assert.Equal(t, []string{"uid-ours", "uid-ours/c"}, uids(mine, true))
	assert.Empty(t, uids(mine, false))
}
