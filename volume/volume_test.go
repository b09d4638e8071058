package volume

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
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
		err := CheckHostPath(&v1.HostPathVolumeSource{Path: tc.path, Type: tc.t})
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
	v, err := New(Config{Layout: podpath.Layout{RootDir: root}})
	require.NoError(t, err)
	host := filepath.Join(t.TempDir(), "data")
	create := v1.HostPathDirectoryOrCreate
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}, Spec: v1.PodSpec{Volumes: []v1.Volume{
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: host, Type: &create}}},
		{Name: "cm", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}},
	}}}
	c := &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{
		{Name: "scratch", MountPath: "/scratch", SubPath: "a/b"},
		{Name: "host", MountPath: "/host", ReadOnly: true},
		{Name: "scratch", MountPath: "/again"},
	}}
	mounts, err := v.Mounts(pod, c)
	require.NoError(t, err)
	require.Len(t, mounts, 3)
	emptyDir := filepath.Join(root, "pods/u1/volumes/kubernetes.io~empty-dir")
	assert.Equal(t, filepath.Join(emptyDir, "scratch/a/b"), mounts[0].HostPath)
	assert.Equal(t, host, mounts[1].HostPath)
	assert.True(t, mounts[1].ReadOnly)
	assert.Equal(t, filepath.Join(emptyDir, "scratch"), mounts[2].HostPath, "set up once, mounted twice")
	assert.DirExists(t, host)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "pods", "not a uid"), 0o755))
	assert.Equal(t, []types.UID{"u1"}, v.PodUIDs(), "the pods with a directory")

	for _, tc := range []struct {
		mount v1.VolumeMount
		want  string
	}{
		{v1.VolumeMount{Name: "cm", MountPath: "/cm"}, "volumes[cm]: unsupported volume type: this node serves empty-dir, host-path and image volumes"},
		{v1.VolumeMount{Name: "nope", MountPath: "/x"}, `volumeMounts[0].name: Not found: "nope"`},
		{v1.VolumeMount{Name: "scratch", MountPath: "/x", SubPath: "../../etc"}, `volumeMounts[0].subPath: Invalid value: "../../etc"`},
		{v1.VolumeMount{Name: "scratch", MountPath: "/x", SubPath: "/etc"}, `volumeMounts[0].subPath: Invalid value: "/etc"`},
	} {
		_, err = v.Mounts(pod, &v1.Container{VolumeMounts: []v1.VolumeMount{tc.mount}})
		assert.ErrorContains(t, err, tc.want)
	}

	require.NoError(t, v.TearDown(&v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}}), "the UID alone: an orphaned directory")
	assert.NoDirExists(t, filepath.Join(root, "pods/u1"))
	assert.Empty(t, v.PodUIDs())
	assert.DirExists(t, host, "hostPath is left alone")
}

// TestImageVolumeMounts: an image volume is the kubelet's image plugin's,
// nothing on the node: its mount has no host path, its volume's name (for
// the runtime manager to fill in the pulled image), is read-only whatever
// the volumeMount says, and carries its subPath (or expanded
// subPathExpr) as ImageSubPath, with the same checks as other subPaths.
func TestImageVolumeMounts(t *testing.T) {
	image := []v1.Volume{{Name: "img", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "example.com/data:1"}}}}
	for _, tc := range []struct {
		name    string
		plugins []Plugin
		mount   v1.VolumeMount
		env     []v1.EnvVar
		want    kc.Mount
		err     string
	}{
		{name: "whole image", mount: v1.VolumeMount{Name: "img", MountPath: "/data"},
			want: kc.Mount{Name: "img", ContainerPath: "/data", ReadOnly: true}},
		{name: "readOnly false is still read-only", mount: v1.VolumeMount{Name: "img", MountPath: "/data", ReadOnly: false},
			want: kc.Mount{Name: "img", ContainerPath: "/data", ReadOnly: true}},
		{name: "subPath", mount: v1.VolumeMount{Name: "img", MountPath: "/bin/tool", SubPath: "usr/bin/tool"},
			want: kc.Mount{Name: "img", ContainerPath: "/bin/tool", ReadOnly: true, ImageSubPath: "usr/bin/tool"}},
		{name: "subPathExpr", mount: v1.VolumeMount{Name: "img", MountPath: "/d", SubPathExpr: "dir/$(WHICH)"},
			env:  []v1.EnvVar{{Name: "WHICH", Value: "two"}},
			want: kc.Mount{Name: "img", ContainerPath: "/d", ReadOnly: true, ImageSubPath: "dir/two"}},
		{name: "subPath out of the image", mount: v1.VolumeMount{Name: "img", MountPath: "/d", SubPath: "../etc"},
			err: `volumeMounts[0].subPath: Invalid value: "../etc"`},
		{name: "a node without the plugin refuses it", plugins: []Plugin{EmptyDir{}},
			mount: v1.VolumeMount{Name: "img", MountPath: "/d"},
			err:   "volumes[img]: unsupported volume type: this node serves empty-dir volumes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			v, err := New(Config{Layout: podpath.Layout{RootDir: root}, Plugins: tc.plugins})
			require.NoError(t, err)
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}, Spec: v1.PodSpec{Volumes: image}}
			mounts, err := v.ContainerMounts(pod, &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{tc.mount}}, tc.env)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, []kc.Mount{tc.want}, mounts)
			require.NoError(t, v.SetUpAll(pod), "the periodic sync has nothing to do for it")
			assert.NoDirExists(t, filepath.Join(root, "pods/u1/volumes/kubernetes.io~image"), "nothing on the node")
			stats, err := v.PodVolumeStats(pod)
			require.NoError(t, err)
			assert.Empty(t, stats, "not measured, as the kubelet's image plugin")
			require.NoError(t, v.TearDown(pod))
		})
	}
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
	v, err := New(Config{Layout: podpath.Layout{RootDir: root}})
	require.NoError(t, err)
	scratch := []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	mount := &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "scratch", MountPath: "/s"}}}
	for _, uid := range []types.UID{"../../victim", "..", ".", "../../../a", "a/b", ""} {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}, Spec: v1.PodSpec{Volumes: scratch}}
		_, err := v.Mounts(pod, mount)
		assert.ErrorContains(t, err, "metadata.uid: Invalid value", "%q", uid)
		assert.ErrorContains(t, v.TearDown(pod), "metadata.uid: Invalid value", "%q", uid)
	}
	badVol := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}, Spec: v1.PodSpec{Volumes: []v1.Volume{
		{Name: "../../../../victim", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}}}
	_, err = v.Mounts(badVol, &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "../../../../victim", MountPath: "/x"}}})
	assert.ErrorContains(t, err, `spec.volumes.name: Invalid value: "../../../../victim"`)
	assert.DirExists(t, victim)
	assert.DirExists(t, filepath.Join(root, "pods", "keep"), "--root-dir and its other pods are untouched")

	// A container plants a link in its volume; a later subPath goes through it.
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u2"}, Spec: v1.PodSpec{Volumes: scratch}}
	mounts, err := v.Mounts(pod, mount)
	require.NoError(t, err)
	require.NoError(t, os.Symlink(victim, filepath.Join(mounts[0].HostPath, "escape")))
	_, err = v.Mounts(pod, &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "scratch", MountPath: "/x", SubPath: "escape/new"}}})
	assert.ErrorContains(t, err, "volumeMounts[0].subPath")
	assert.NoDirExists(t, filepath.Join(victim, "new"))
	require.NoError(t, v.TearDown(pod))
	assert.DirExists(t, victim, "tearing down removed the link, not its target")
	assert.NoDirExists(t, filepath.Join(root, "pods", "u2"))
}

func TestNewValidates(t *testing.T) {
	_, err := New(Config{Layout: podpath.Layout{RootDir: "var/lib/kubelet"}})
	assert.EqualError(t, err, `volume: Config.Layout.RootDir: Invalid value: "var/lib/kubelet": must be an absolute path`)
	_, err = New(Config{Plugins: []Plugin{EmptyDir{}, nil}})
	assert.EqualError(t, err, "volume: Config.Plugins[1] is nil")
}

// TestEmptyDirMode pins the kubelet's emptyDir setupDir: the directory is
// made 0777 by a chmod after mkdir, so the umask does not apply and
// non-root containers can write ("EmptyDir volumes should support
// (non-root,0644,default)", "volume on default medium should have the
// correct mode"). configMap and downwardAPI volumes wrap an emptyDir in the
// kubelet and get the same root. A subPath directory is created with the
// volume's mode, chmodded past the umask (the kubelet's SafeMakeDir).
func TestEmptyDirMode(t *testing.T) {
	defer unix.Umask(unix.Umask(0o022))
	objs := &objects{cms: map[string]*v1.ConfigMap{"cfg": {Data: map[string]string{"k": "v"}}}}
	m, err := New(Config{Layout: podpath.Layout{RootDir: t.TempDir()},
		Plugins: []Plugin{EmptyDir{}, ConfigMap{Objects: objs}, DownwardAPI{}}})
	require.NoError(t, err)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u1"}, Spec: v1.PodSpec{Volumes: []v1.Volume{
		{Name: "disk", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}},
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{}}},
	}}}
	for _, tc := range []struct {
		mount v1.VolumeMount
		paths []string // below the volume's directory
		want  os.FileMode
	}{
		{v1.VolumeMount{Name: "disk", MountPath: "/d"}, []string{"."}, 0o777},
		{v1.VolumeMount{Name: "mem", MountPath: "/m"}, []string{"."}, 0o777},
		{v1.VolumeMount{Name: "disk", MountPath: "/s", SubPath: "a/b"}, []string{"a", "a/b"}, 0o777},
		{v1.VolumeMount{Name: "cfg", MountPath: "/c"}, []string{"."}, 0o777},
		{v1.VolumeMount{Name: "info", MountPath: "/i"}, []string{"."}, 0o777},
	} {
		mounts, err := m.Mounts(pod, &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{tc.mount}})
		require.NoError(t, err, tc.mount.Name)
		dir, err := m.layout.PodVolumeDir("u1", m.pluginFor(volumeNamed(pod, tc.mount.Name)).Name(), tc.mount.Name)
		require.NoError(t, err)
		for _, p := range tc.paths {
			assertMode(t, filepath.Join(dir, p), tc.want)
		}
		assert.Equal(t, filepath.Join(dir, tc.mount.SubPath), mounts[0].HostPath)
	}

	// Set up once: a container's chmod of its emptyDir stays.
	disk := filepath.Join(m.layout.Root(), "pods/u1/volumes/kubernetes.io~empty-dir/disk")
	require.NoError(t, os.Chmod(disk, 0o750))
	require.NoError(t, m.SetUpAll(pod))
	assertMode(t, disk, 0o750)
}

func volumeNamed(pod *v1.Pod, name string) *v1.Volume {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			return &pod.Spec.Volumes[i]
		}
	}
	return nil
}
