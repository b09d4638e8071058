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

// TestMemoryEmptyDir mounts a real tmpfs (root only: build tag
// integration, run by hack/test.sh) with sizeLimit as its size, and
// unmounts it on tear-down.
func TestMemoryEmptyDir(t *testing.T) {
	require.Equal(t, 0, os.Geteuid(), "mounting tmpfs needs root: run through hack/test.sh")
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
	assert.True(t, isMountPoint(dir), "memory emptyDir is a tmpfs")
	_, err = v.Mounts(pod, &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "mem", MountPath: "/mem"}}})
	require.NoError(t, err, "set up again: idempotent, not mounted twice")
	big := make([]byte, 2<<20)
	assert.Error(t, os.WriteFile(filepath.Join(dir, "big"), big, 0o644), "sizeLimit is the tmpfs size")
	require.NoError(t, v.TearDown(pod))
	assert.NoDirExists(t, filepath.Join(root, "pods/u1"))
}
