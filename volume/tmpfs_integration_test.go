//go:build integration

package volume

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit-dev/nodekit/podpath"
)

// hostMountsFor makes t's tmpfs mounts real (root only).
func hostMountsFor(t *testing.T) { swapMounter(t, hostMounts{}) }

// TestMemoryEmptyDir mounts a real tmpfs (root only: build tag
// integration, run by hack/test.sh) with sizeLimit as its size, and
// unmounts it on tear-down.
func TestMemoryEmptyDir(t *testing.T) {
	require.Equal(t, 0, os.Geteuid(), "mounting tmpfs needs root: run through hack/test.sh")
	hostMountsFor(t)
	root := t.TempDir()
	v, err := New(Config{Layout: podpath.Layout{RootDir: root}})
	require.NoError(t, err)
	limit := resource.MustParse("1Mi")
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}, Spec: v1.PodSpec{Volumes: []v1.Volume{
		{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: &limit}}}}}}
	mounts, err := v.Mounts(pod, &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "mem", MountPath: "/mem"}}})
	require.NoError(t, err)
	dir := filepath.Join(root, "pods/u1/volumes/kubernetes.io~empty-dir/mem")
	require.Equal(t, dir, mounts[0].HostPath)
	assert.True(t, mnt.isMountPoint(dir), "memory emptyDir is a tmpfs")
	_, err = v.Mounts(pod, &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "mem", MountPath: "/mem"}}})
	require.NoError(t, err, "set up again: idempotent, not mounted twice")
	big := make([]byte, 2<<20)
	assert.Error(t, os.WriteFile(filepath.Join(dir, "big"), big, 0o644), "sizeLimit is the tmpfs size")
	require.NoError(t, v.TearDown(pod))
	assert.NoDirExists(t, filepath.Join(root, "pods/u1"))
}

// A memory-backed emptyDir is measured on its own tmpfs, exactly: the
// file's pages (the tmpfs directory takes none), its size the tmpfs's.
func TestMemoryEmptyDirStats(t *testing.T) {
	require.Equal(t, 0, os.Geteuid(), "mounting tmpfs needs root: run through hack/test.sh")
	hostMountsFor(t)
	v, err := New(Config{Layout: podpath.Layout{RootDir: t.TempDir()}})
	require.NoError(t, err)
	limit := resource.MustParse("8Mi")
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}, Spec: v1.PodSpec{Volumes: []v1.Volume{
		{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: &limit}}}}}}
	dir, err := v.SetUp(pod, &pod.Spec.Volumes[0])
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, v.TearDown(pod)) })
	require.NoError(t, os.WriteFile(filepath.Join(dir, "data"), make([]byte, 1<<20), 0o644))
	require.NoError(t, os.Symlink("data", filepath.Join(dir, "link")))

	got, err := v.PodVolumeStats(pod)
	require.NoError(t, err)
	require.Len(t, got, 1)
	st := got[0].FsStats
	assert.Equal(t, uint64(1<<20), *st.UsedBytes, "the file's pages; the directory and the short symlink take none")
	assert.Equal(t, uint64(3), *st.InodesUsed, "the directory, data and link")
	assert.Equal(t, uint64(8<<20), *st.CapacityBytes, "the tmpfs's size")
	assert.Equal(t, uint64(7<<20), *st.AvailableBytes)
}

// TestSecretOnTmpfs mounts a real tmpfs for a secret volume, sized by the
// pod's memory limit, with the fsGroup's ownership on it, and unmounts it
// on a tear-down that knows only the UID.
func TestSecretOnTmpfs(t *testing.T) {
	require.Equal(t, 0, os.Geteuid(), "mounting tmpfs needs root: run through hack/test.sh")
	hostMountsFor(t)
	objs := &objects{secrets: map[string]*v1.Secret{"s": {Data: map[string][]byte{"pw": []byte("s3cret")}}}}
	v, err := New(Config{Layout: podpath.Layout{RootDir: t.TempDir()}, Plugins: []Plugin{
		Secret{Objects: objs, PodMemoryLimit: func(*v1.Pod) int64 { return 8 << 20 }}}})
	require.NoError(t, err)
	gid := int64(4321)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}, Spec: v1.PodSpec{
		SecurityContext: &v1.PodSecurityContext{FSGroup: &gid},
		Volumes:         []v1.Volume{{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}}}}}}
	dir, err := v.SetUp(pod, &pod.Spec.Volumes[0])
	require.NoError(t, err)
	t.Cleanup(func() { _ = mnt.unmount(dir) })
	require.NoError(t, v.SetUpAll(pod), "set up again: not mounted twice")
	assert.True(t, mnt.isMountPoint(dir), "secret volume is a tmpfs")
	assert.Equal(t, "s3cret", read(t, filepath.Join(dir, "pw")))
	g, mode := ownerOf(t, filepath.Join(dir, "pw"))
	assert.Equal(t, gid, g)
	assert.Equal(t, os.FileMode(0o644), mode)
	stats, err := v.PodVolumeStats(pod)
	require.NoError(t, err)
	require.Len(t, stats, 1)
	assert.Equal(t, uint64(8<<20), *stats[0].CapacityBytes, "the pod's memory limit is the tmpfs size")
	require.NoError(t, v.TearDown(&v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}}))
	assert.False(t, mnt.isMountPoint(dir))
	assert.NoDirExists(t, dir)
}
