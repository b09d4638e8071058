//go:build integration

package server_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit-dev/nodekit/internal/testenv"
	"github.com/nodekit-dev/nodekit/podpath"
	"github.com/nodekit-dev/nodekit/server"
	"github.com/nodekit-dev/nodekit/volume"
)

// The whole chain on an 8 MiB tmpfs holding --root-dir and --pod-logs-dir
// (root only: build tag integration, run by hack/test.sh), where every
// figure is exact: a file takes its pages, directories and symlinks none.
func TestSummaryStorageOnTmpfs(t *testing.T) {
	mnt := filepath.Join(t.TempDir(), "mnt")
	testenv.MountTmpfs(t, mnt, 8*mib)
	layout := podpath.Layout{RootDir: filepath.Join(mnt, "root"), PodLogsDir: filepath.Join(mnt, "logs")}
	vols, err := volume.New(volume.Config{Layout: layout, Plugins: []volume.Plugin{volume.EmptyDir{}, volume.DownwardAPI{}}})
	require.NoError(t, err)

	started := metav1.NewTime(now)
	pod := v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"},
		Spec: v1.PodSpec{Volumes: []v1.Volume{
			{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
				{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
		}},
		Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "app", ContainerID: "containerd://c1",
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: started}}}}}}
	require.NoError(t, vols.SetUpAll(&pod))
	writeFile(t, filepath.Join(layout.RootDir, "pods/u1/volumes/kubernetes.io~empty-dir/cache/data"), mib)
	writeFile(t, filepath.Join(layout.PodLogsDir, "default_web_u1/app/0.log"), mib)

	p := &server.SummaryProvider{NodeName: "n1", Pods: pods{pod}, Layout: &layout, Volumes: vols,
		Containers: stats{{Attributes: &runtimeapi.ContainerAttributes{Id: "c1"}, WritableLayer: fsUsage(mnt, 0, 512*kib, 5)}},
		ImageFs:    imageFs{fss: []*runtimeapi.FilesystemUsage{fsUsage(mnt, 0, 3*mib, 30)}}}
	s, err := p.Summary(context.Background())
	require.NoError(t, err)

	page := uint64(os.Getpagesize())
	used := 2*mib + page // data, 0.log, the downward file
	fs := s.Node.Fs
	assert.Equal(t, uint64(8*mib), *fs.CapacityBytes)
	assert.Equal(t, used, *fs.UsedBytes)
	assert.Equal(t, 8*mib-used, *fs.AvailableBytes)
	assert.Equal(t, *fs.Inodes-*fs.InodesFree, *fs.InodesUsed)
	assert.Equal(t, uint64(3*mib), *s.Node.Runtime.ImageFs.UsedBytes)
	assert.Equal(t, 8*mib-used, *s.Node.Runtime.ImageFs.AvailableBytes)

	ps := s.Pods[0]
	app := ps.Containers[0]
	assert.Equal(t, uint64(512*kib), *app.Rootfs.UsedBytes)
	assert.Equal(t, uint64(8*mib), *app.Rootfs.CapacityBytes)
	assert.Equal(t, uint64(mib), *app.Logs.UsedBytes)
	assert.Equal(t, uint64(1), *app.Logs.InodesUsed)
	require.Len(t, ps.VolumeStats, 2)
	assert.Equal(t, "cache", ps.VolumeStats[0].Name)
	assert.Equal(t, uint64(mib), *ps.VolumeStats[0].UsedBytes)
	assert.Equal(t, uint64(2), *ps.VolumeStats[0].InodesUsed, "the directory and data")
	assert.Equal(t, "info", ps.VolumeStats[1].Name)
	assert.Equal(t, page, *ps.VolumeStats[1].UsedBytes)
	assert.Equal(t, uint64(5), *ps.VolumeStats[1].InodesUsed, "the directory, ..<timestamp>/name, ..data and name")
	eph := ps.EphemeralStorage
	assert.Equal(t, uint64(512*kib+mib+mib), *eph.UsedBytes, "writable layer, logs, the emptyDir; not the downwardAPI volume")
	assert.Equal(t, uint64(5+1+2), *eph.InodesUsed)
	assert.Equal(t, uint64(8*mib), *eph.CapacityBytes)
}
