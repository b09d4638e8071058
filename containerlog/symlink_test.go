package containerlog_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit-dev/nodekit/containerlog"
)

func TestSymlinkPath(t *testing.T) {
	id := strings.Repeat("0123456789abcdef", 4) // a containerd ID: 64 hex digits
	long := strings.Repeat("n", 200)
	for _, tc := range []struct {
		name string
		ref  containerlog.ContainerRef
		want string
	}{
		{"kubelet's name", containerlog.ContainerRef{PodName: "web-7d4b9", PodNamespace: "default", ContainerName: "nginx", ContainerID: id},
			"web-7d4b9_default_nginx-" + id + ".log"},
		// 200 + 1 + 7 + 1 + 5 + 1 + 64 = 279 > 251: the ID is cut to 36.
		{"cut to 255 bytes", containerlog.ContainerRef{PodName: long, PodNamespace: "default", ContainerName: "nginx", ContainerID: id},
			long + "_default_nginx-" + id[:36] + ".log"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := containerlog.SymlinkPath("/var/log/containers", tc.ref)
			assert.Equal(t, "/var/log/containers/"+tc.want, got)
			assert.LessOrEqual(t, len(filepath.Base(got)), 255)
		})
	}
}

func TestCreateAndRemoveSymlink(t *testing.T) {
	dir, logs := filepath.Join(t.TempDir(), "containers"), t.TempDir()
	require.NoError(t, containerlog.MakeSymlinkDir(dir))
	require.NoError(t, containerlog.MakeSymlinkDir(dir), "again")
	logPath := filepath.Join(logs, "0.log")
	require.NoError(t, os.WriteFile(logPath, []byte("hello\n"), 0o640))
	ref := containerlog.ContainerRef{PodName: "web", PodNamespace: "default", ContainerName: "app", ContainerID: "abcdef123456"}
	link := filepath.Join(dir, "web_default_app-abcdef123456.log")

	require.NoError(t, containerlog.CreateSymlink(dir, ref, logPath))
	target, err := os.Readlink(link)
	require.NoError(t, err)
	assert.Equal(t, logPath, target)
	b, err := os.ReadFile(link)
	require.NoError(t, err)
	assert.Equal(t, "hello\n", string(b))
	require.NoError(t, containerlog.CreateSymlink(dir, ref, logPath), "the same link again")
	require.NoError(t, containerlog.CreateSymlink(dir, ref, filepath.Join(logs, "elsewhere")), "a missing log: nothing done")
	require.NoError(t, os.WriteFile(filepath.Join(logs, "other"), nil, 0o640))
	assert.ErrorIs(t, containerlog.CreateSymlink(dir, ref, filepath.Join(logs, "other")), os.ErrExist, "another target")

	target, err = os.Readlink(link)
	require.NoError(t, err)
	assert.Equal(t, logPath, target, "unchanged")

	require.NoError(t, containerlog.RemoveSymlink(dir, ref))
	assert.NoFileExists(t, link)
	require.NoError(t, containerlog.RemoveSymlink(dir, ref), "already gone")

	other := containerlog.ContainerRef{PodName: "web", PodNamespace: "default", ContainerName: "app", ContainerID: "fedcba654321"}
	require.NoError(t, containerlog.CreateSymlink(dir, other, filepath.Join(logs, "1.log")), "no log file: no link")
	assert.Empty(t, names(t, dir))
}

// statuses is a StatusReader answering from a map; an ID it lacks is not
// found.
type statuses map[string]*runtimeapi.ContainerStatus

func (s statuses) ContainerStatus(_ context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	st, ok := s[id]
	if !ok {
		return nil, errors.New("not found")
	}
	return &runtimeapi.ContainerStatusResponse{Status: st}, nil
}

func TestRemoveDeadSymlinks(t *testing.T) {
	dir, logs := t.TempDir(), t.TempDir()
	live := filepath.Join(logs, "live.log")
	require.NoError(t, os.WriteFile(live, nil, 0o640))
	gone := filepath.Join(logs, "gone.log")
	rt := statuses{
		"exited123456": {State: runtimeapi.ContainerState_CONTAINER_EXITED},
		"running12345": {State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		"created12345": {State: runtimeapi.ContainerState_CONTAINER_CREATED},
		"unknown12345": {State: runtimeapi.ContainerState_CONTAINER_UNKNOWN},
		"nilstatus123": nil,
		"livetarget12": {State: runtimeapi.ContainerState_CONTAINER_EXITED},
		"notalogfile1": {State: runtimeapi.ContainerState_CONTAINER_EXITED},
	}
	for name, target := range map[string]string{
		"p_ns_c-exited123456.log": gone, // exited: removed
		"p_ns_c-running12345.log": gone, // between a rotation's rename and reopen: kept
		"p_ns_c-created12345.log": gone, // kept
		"p_ns_c-unknown12345.log": gone, // kept
		"p_ns_c-nilstatus123.log": gone, // no status: kept
		"p_ns_c-removed12345.log": gone, // the runtime does not know it: removed
		"p_ns_c-abc.log":          gone, // ID too short to ask about: removed
		"p_ns_c-livetarget12.log": live, // target there: kept
		"p_ns_c-notalogfile1.txt": gone, // not *.log: kept
	} {
		require.NoError(t, os.Symlink(target, filepath.Join(dir, name)))
	}
	removed, err := containerlog.RemoveDeadSymlinks(context.Background(), dir, rt)
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(dir, "p_ns_c-abc.log"), filepath.Join(dir, "p_ns_c-exited123456.log"),
		filepath.Join(dir, "p_ns_c-removed12345.log")}, removed)
	assert.Equal(t, []string{"p_ns_c-created12345.log", "p_ns_c-livetarget12.log", "p_ns_c-nilstatus123.log",
		"p_ns_c-notalogfile1.txt", "p_ns_c-running12345.log", "p_ns_c-unknown12345.log"}, names(t, dir))

	removed, err = containerlog.RemoveDeadSymlinks(context.Background(), filepath.Join(dir, "none"), rt)
	assert.NoError(t, err, "no directory")
	assert.Empty(t, removed)
}
