package main

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit-dev/nodekit/podpath"
)

func TestHostPathTypes(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	sock := filepath.Join(dir, "s")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer l.Close()
	typ := func(t v1.HostPathType) *v1.HostPathType { return &t }
	for _, tc := range []struct {
		path string
		t    *v1.HostPathType
		err  string
	}{
		{filepath.Join(dir, "missing"), nil, ""},
		{dir, typ(v1.HostPathDirectory), ""},
		{file, typ(v1.HostPathDirectory), `hostPath.type: Invalid value: "Directory"`},
		{filepath.Join(dir, "missing"), typ(v1.HostPathDirectory), "hostPath.path: Invalid value"},
		{filepath.Join(dir, "new/sub"), typ(v1.HostPathDirectoryOrCreate), ""},
		{filepath.Join(dir, "newfile"), typ(v1.HostPathFileOrCreate), ""},
		{file, typ(v1.HostPathFile), ""},
		{dir, typ(v1.HostPathFile), `hostPath.type: Invalid value: "File"`},
		{sock, typ(v1.HostPathSocket), ""},
		{file, typ(v1.HostPathSocket), `hostPath.type: Invalid value: "Socket"`},
		{"/dev/null", typ(v1.HostPathCharDev), ""},
	} {
		err := checkHostPath(&v1.HostPathVolumeSource{Path: tc.path, Type: tc.t})
		if tc.err == "" {
			assert.NoError(t, err, tc.path)
		} else {
			assert.ErrorContains(t, err, tc.err, tc.path)
		}
	}
	assert.DirExists(t, filepath.Join(dir, "new/sub"))
	assert.FileExists(t, filepath.Join(dir, "newfile"))
}

func TestVolumeMountsAndTearDown(t *testing.T) {
	root := t.TempDir()
	v := volumes{layout: podpath.Layout{RootDir: root}}
	host := filepath.Join(t.TempDir(), "data")
	create := v1.HostPathDirectoryOrCreate
	limit := resource.MustParse("1Mi")
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}, Spec: v1.PodSpec{Volumes: []v1.Volume{
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: &limit}}},
		{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: host, Type: &create}}},
		{Name: "cm", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}},
	}}}
	c := &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{
		{Name: "scratch", MountPath: "/scratch", SubPath: "a/b"},
		{Name: "mem", MountPath: "/mem"},
		{Name: "host", MountPath: "/host", ReadOnly: true},
	}}
	mounts, err := v.mounts(pod, c)
	require.NoError(t, err)
	require.Len(t, mounts, 3)
	emptyDir := filepath.Join(root, "pods/u1/volumes/kubernetes.io~empty-dir")
	assert.Equal(t, filepath.Join(emptyDir, "scratch/a/b"), mounts[0].HostPath)
	assert.Equal(t, "/mem", mounts[1].ContainerPath)
	assert.True(t, isMountPoint(filepath.Join(emptyDir, "mem")), "memory emptyDir is a tmpfs")
	assert.True(t, mounts[2].Readonly)
	assert.DirExists(t, host)

	_, err = v.mounts(pod, &v1.Container{VolumeMounts: []v1.VolumeMount{{Name: "cm", MountPath: "/cm"}}})
	assert.ErrorContains(t, err, "volumes[cm]: only emptyDir and hostPath")
	_, err = v.mounts(pod, &v1.Container{VolumeMounts: []v1.VolumeMount{{Name: "nope", MountPath: "/x"}}})
	assert.ErrorContains(t, err, `volumeMounts[0].name: Not found: "nope"`)
	_, err = v.mounts(pod, &v1.Container{VolumeMounts: []v1.VolumeMount{{Name: "scratch", MountPath: "/x", SubPath: "../../etc"}}})
	assert.ErrorContains(t, err, "volumeMounts[0].subPath: Invalid value")

	require.NoError(t, v.tearDown(pod))
	assert.NoDirExists(t, filepath.Join(root, "pods/u1"))
	assert.DirExists(t, host, "hostPath is left alone")
}

// TestVolumesStayInsideTheirDirectories: a hostile UID or volume name
// gets an error naming the field, tearing such a pod down removes nothing,
// and a symlink a container planted in its emptyDir does not take a later
// subPath outside the volume.
func TestVolumesStayInsideTheirDirectories(t *testing.T) {
	world := t.TempDir()
	root := filepath.Join(world, "a", "b", "root")
	victim := filepath.Join(world, "a", "victim")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "pods", "keep"), 0o755))
	require.NoError(t, os.MkdirAll(victim, 0o755))
	v := volumes{layout: podpath.Layout{RootDir: root}}
	scratch := []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	mount := &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "scratch", MountPath: "/s"}}}
	for _, uid := range []types.UID{"../../victim", "..", ".", "../../../a", "a/b", ""} {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}, Spec: v1.PodSpec{Volumes: scratch}}
		_, err := v.mounts(pod, mount)
		assert.ErrorContains(t, err, "metadata.uid: Invalid value", "%q", uid)
		assert.ErrorContains(t, v.tearDown(pod), "metadata.uid: Invalid value", "%q", uid)
	}
	badVol := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}, Spec: v1.PodSpec{Volumes: []v1.Volume{
		{Name: "../../../../victim", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}}}
	_, err := v.mounts(badVol, &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "../../../../victim", MountPath: "/x"}}})
	assert.ErrorContains(t, err, `spec.volumes.name: Invalid value: "../../../../victim"`)
	assert.DirExists(t, victim)
	assert.DirExists(t, filepath.Join(root, "pods", "keep"), "--root-dir and its other pods are untouched")

	// A container plants a link in its volume; a later subPath goes through it.
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u2"}, Spec: v1.PodSpec{Volumes: scratch}}
	mounts, err := v.mounts(pod, mount)
	require.NoError(t, err)
	require.NoError(t, os.Symlink(victim, filepath.Join(mounts[0].HostPath, "escape")))
	_, err = v.mounts(pod, &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "scratch", MountPath: "/x", SubPath: "escape/new"}}})
	assert.ErrorContains(t, err, "volumeMounts[0].subPath")
	assert.NoDirExists(t, filepath.Join(victim, "new"))
	require.NoError(t, v.tearDown(pod))
	assert.DirExists(t, victim, "tearing down removed the link, not its target")
	assert.NoDirExists(t, filepath.Join(root, "pods", "u2"))
}
