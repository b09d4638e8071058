package kuberuntime_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/kuberuntime"
)

// TestSyncPodRefusesPathsOutsideLogsDir: pods whose UID, name or
// namespace would put their log directory outside PodLogsDir (the API
// server never sends such pods; a manifest or a caller's bug could) fail
// to sync with an error naming the field, and nothing is created outside.
func TestSyncPodRefusesPathsOutsideLogsDir(t *testing.T) {
	world := t.TempDir()
	logs := filepath.Join(world, "a", "b", "logs")
	require.NoError(t, os.MkdirAll(logs, 0o755))
	_, client := startFake(t)
	m, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: client, PodLogsDir: logs, DNS: kuberuntime.HostDNS("", nil, "")})
	require.NoError(t, err)
	for _, tc := range []struct {
		name, namespace string
		uid             types.UID
		want            string
	}{
		{"p", "default", "../../victim", `metadata.uid: Invalid value: "../../victim"`},
		{"p", "default", "..", `metadata.uid: Invalid value: ".."`},
		{"p", "default", types.UID(strings.Repeat("u", 2000)), "(2000 bytes): must be no more than 128"},
		{"p", "../..", "u1", `metadata.namespace: Invalid value: "../.."`},
		{"../../x", "default", "u1", `metadata.name: Invalid value: "../../x"`},
		{strings.Repeat("n", 250), "default", "u1", "over the 255 a file name may have"},
	} {
		pod := &v1.Pod{}
		pod.Name, pod.Namespace, pod.UID = tc.name, tc.namespace, tc.uid
		pod.Spec.Containers = []v1.Container{{Name: "c", Image: testImage, Args: []string{"sleep"}}}
		res := m.SyncPod(t.Context(), pod, nil, kuberuntime.SyncOptions{})
		require.Error(t, res.Err(), tc.want)
		assert.ErrorIs(t, res.Err(), kuberuntime.ErrConfigPodSandbox)
		assert.Contains(t, res.Err().Error(), tc.want)
	}
	var made []string
	require.NoError(t, filepath.WalkDir(world, func(p string, d os.DirEntry, err error) error {
		made = append(made, strings.TrimPrefix(p, world))
		return err
	}))
	assert.Equal(t, []string{"", "/a", "/a/b", "/a/b/logs"}, made, "nothing created anywhere")
	pods, err := m.GetPods(t.Context(), true)
	require.NoError(t, err)
	assert.Empty(t, pods, "no sandbox for a refused pod")
}

// TestRemovePodRemovesItsLogs: removing a pod removes its log directory;
// CleanupPodLogs removes those of pods the runtime and the caller no longer
// have, and leaves alone what is not a pod log directory.
func TestRemovePodRemovesItsLogs(t *testing.T) {
	logs := t.TempDir()
	_, client := startFake(t)
	m, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: client, PodLogsDir: logs, DNS: kuberuntime.HostDNS("", nil, "")})
	require.NoError(t, err)
	ctx := t.Context()
	run := func(name string) *v1.Pod {
		pod := podSpec(name, v1.RestartPolicyAlways, v1.Container{Name: "c", Image: testImage, Args: []string{"echo", "hi"}})
		require.NoError(t, m.SyncPod(ctx, pod, nil, kuberuntime.SyncOptions{}).Err())
		require.DirExists(t, filepath.Join(logs, "default_"+name+"_uid-"+name))
		return pod
	}
	a, c := run("a"), run("c")
	run("b")
	require.NoError(t, m.KillPod(ctx, a, podFromRuntime(t, m, a), nil))
	require.NoError(t, m.RemovePod(ctx, a.UID))
	assert.NoDirExists(t, filepath.Join(logs, "default_a_uid-a"), "removed with its pod")
	assert.DirExists(t, filepath.Join(logs, "default_b_uid-b"))

	// Left over: logs of a pod gone from the runtime, and files that are not pod logs.
	require.NoError(t, os.MkdirAll(filepath.Join(logs, "default_gone_uid-gone", "c"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(logs, "not-a-pod-dir"), 0o755))
	require.NoError(t, os.Symlink(t.TempDir(), filepath.Join(logs, "default_link_uid-link")))
	removed, err := m.CleanupPodLogs(ctx, func(uid types.UID) bool { return uid == c.UID })
	require.NoError(t, err)
	assert.Equal(t, []types.UID{"uid-gone"}, removed)
	for _, keep := range []string{"default_b_uid-b", "default_c_uid-c", "not-a-pod-dir"} {
		assert.DirExists(t, filepath.Join(logs, keep), "%s kept", keep)
	}
	_, err = os.Lstat(filepath.Join(logs, "default_link_uid-link"))
	assert.NoError(t, err, "a symlink is not a pod log directory the manager made")
}

func podFromRuntime(t *testing.T, m *kuberuntime.Manager, pod *v1.Pod) *kc.Pod {
	t.Helper()
	st, err := m.GetPodStatus(t.Context(), pod.UID, pod.Name, pod.Namespace)
	require.NoError(t, err)
	return kuberuntime.PodFromStatus(st)
}
