//go:build integration

package kuberuntime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/nodekit-dev/nodekit/internal/testenv"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/podpath"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/userns"
)

// containerPid is the host PID of the container's process, from the
// runtime's verbose status (containerd's info.pid).
func containerPid(t *testing.T, client *runtime.Client, id string) int {
	t.Helper()
	resp, err := client.ContainerStatus(context.Background(), id, true)
	require.NoError(t, err)
	var info struct {
		Pid int `json:"pid"`
	}
	require.NoError(t, json.Unmarshal([]byte(resp.Info["info"]), &info), "container %s info", id)
	require.NotZero(t, info.Pid, "container %s pid", id)
	return info.Pid
}

func procFile(t *testing.T, pid int, name string) string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, name))
	require.NoError(t, err)
	return string(data)
}

// TestUserNamespacesOnContainerd: two pods with hostUsers: false run on
// real containerd and runc, each in its own user namespace, whose root is
// the first of 65536 unprivileged host IDs allocated by package userns
// (seen from the host in /proc/<pid>/uid_map, gid_map and status); a new
// userns.Manager reading the pod directories finds the same ranges, and
// a removed pod's range is freed with its file.
func TestUserNamespacesOnContainerd(t *testing.T) {
	cd := testenv.NeedContainerd(t)
	client := cd.Dial(t)
	ctx := context.Background()
	root := t.TempDir()
	handlers := userns.HandlersFunc(func(h string) (bool, error) {
		st, err := client.Status(ctx, false)
		if err != nil {
			return false, err
		}
		return kuberuntime.HandlerSupportsUserNamespaces(st, h)
	})
	cfg := userns.Config{Layout: podpath.Layout{RootDir: root}, Handlers: handlers}
	um, err := userns.New(cfg)
	require.NoError(t, err)
	m, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: client, PodLogsDir: t.TempDir(),
		RootDir: root, UserNamespaces: um})
	require.NoError(t, err)

	bases := map[types.UID]uint32{}
	var uids []types.UID
	for _, name := range []string{"userns-a", "userns-b"} {
		uid := types.UID(name + "-" + rand.String(8))
		uids = append(uids, uid)
		cleanupPod(t, m, client, uid)
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: uid},
			Spec: v1.PodSpec{HostUsers: new(bool), Containers: []v1.Container{{Name: "web", Image: testenv.TestImage,
				Args: []string{"serve"}, ImagePullPolicy: v1.PullNever}}},
		}
		st, err := m.GetPodStatus(ctx, uid, pod.Name, pod.Namespace)
		require.NoError(t, err)
		res := m.SyncPod(ctx, pod, st, kuberuntime.SyncOptions{})
		require.NoError(t, res.Err(), "%s: see $NODEKIT_CONTAINERD_LOG", name)
		st, err = m.GetPodStatus(ctx, uid, pod.Name, pod.Namespace)
		require.NoError(t, err)
		cs := st.FindContainerStatusByName("web")
		require.NotNil(t, cs)
		require.Equal(t, kc.ContainerStateRunning, cs.State)

		base, ok := um.Allocated(uid)
		require.True(t, ok)
		assert.GreaterOrEqual(t, base, uint32(65536), "never the host's root range")
		assert.Zero(t, base%65536)
		bases[uid] = base

		pid := containerPid(t, client, cs.ID)
		want := fmt.Sprintf("0 %d 65536", base)
		uidMap, gidMap := procFile(t, pid, "uid_map"), procFile(t, pid, "gid_map")
		t.Logf("%s (pid %d): uid_map %q gid_map %q", name, pid, strings.TrimSpace(uidMap), strings.TrimSpace(gidMap))
		assert.Equal(t, want, strings.Join(strings.Fields(uidMap), " "), "uid_map")
		assert.Equal(t, want, strings.Join(strings.Fields(gidMap), " "), "gid_map")
		for _, line := range strings.Split(procFile(t, pid, "status"), "\n") {
			if f := strings.Fields(line); len(f) == 5 && (f[0] == "Uid:" || f[0] == "Gid:") {
				t.Logf("%s: %s", name, line)
				assert.Equal(t, []string{fmt.Sprint(base), fmt.Sprint(base), fmt.Sprint(base), fmt.Sprint(base)}, f[1:],
					"the container's root is host ID %d: %s", base, line)
			}
		}
	}
	assert.NotEqual(t, bases[uids[0]], bases[uids[1]], "each pod its own range")

	// A restarted node agent reads the ranges back from the pod directories.
	restarted, err := userns.New(cfg)
	require.NoError(t, err)
	for uid, base := range bases {
		got, ok := restarted.Allocated(uid)
		assert.True(t, ok, "%s read back", uid)
		assert.Equal(t, base, got, uid)
	}

	// Removed, the first pod's range is freed with its file.
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err = m.TerminatePod(rctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "userns-a", Namespace: "default", UID: uids[0]}}, nil)
	require.NoError(t, err)
	require.NoError(t, m.RemovePod(rctx, uids[0]))
	restarted.Release(uids[0])
	_, ok := restarted.Allocated(uids[0])
	assert.False(t, ok)
	assert.NoFileExists(t, filepath.Join(root, "pods", string(uids[0]), userns.MappingsFile))
	again, err := userns.New(cfg)
	require.NoError(t, err)
	_, ok = again.Allocated(uids[0])
	assert.False(t, ok, "a released range is not restored")
	got, ok := again.Allocated(uids[1])
	assert.True(t, ok)
	assert.Equal(t, bases[uids[1]], got)
}
