package volume

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit-dev/nodekit/podpath"
)

var subPathEnv = []v1.EnvVar{
	{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
	{Name: "A", Value: "foo"},
	{Name: "B", Value: "$(A)/bar"},
	{Name: "EMPTY"},
	{Name: "ABS", Value: "/etc"},
	{Name: "UP", Value: ".."},
	{Name: "IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
	{Name: "FROM_CM", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{Key: "k"}}},
}

// TestSubPathExpr pins the kubelet's makeMounts: subPathExpr is expanded
// with the container's environment (ExpandContainerVolumeMounts: $(VAR)
// replaced, $$ escapes, a variable unset or empty is an error naming it)
// and the result is a subPath (not absolute, no '..'). Mounts knows the
// values of env[].value and pod fieldRefs; the rest needs the resolved
// environment.
func TestSubPathExpr(t *testing.T) {
	m, err := New(Config{Layout: podpath.Layout{RootDir: t.TempDir()}})
	require.NoError(t, err)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u1"}, Spec: v1.PodSpec{Volumes: []v1.Volume{
		{Name: "logs", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}}}
	vol := filepath.Join(m.layout.Root(), "pods/u1/volumes/kubernetes.io~empty-dir/logs")
	for _, tc := range []struct {
		expr, want, err string
	}{
		{expr: "$(POD_NAME)", want: "p"},
		{expr: "x/$(B)", want: "x/foo/bar"},
		{expr: "$$(A)", want: "$(A)"},
		{expr: "$(NOPE)", err: `volumeMounts[0].subPathExpr: Invalid value: "$(NOPE)": missing value for NOPE`},
		{expr: "$(EMPTY)/$(NOPE)", err: `missing value for EMPTY, NOPE`},
		{expr: "$(IP)", err: `missing value for IP`},
		{expr: "$(FROM_CM)", err: `missing value for FROM_CM`},
		{expr: "$(ABS)", err: `volumeMounts[0].subPathExpr: Invalid value: "$(ABS)": expands to "/etc": must be a relative path without '..'`},
		{expr: "$(UP)/x", err: `expands to "../x": must be a relative path without '..'`},
	} {
		c := &v1.Container{Name: "c", Env: subPathEnv, VolumeMounts: []v1.VolumeMount{{Name: "logs", MountPath: "/logs", SubPathExpr: tc.expr}}}
		mounts, err := m.Mounts(pod, c)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.expr)
			continue
		}
		require.NoError(t, err, tc.expr)
		assert.Equal(t, filepath.Join(vol, tc.want), mounts[0].HostPath, tc.expr)
		assert.DirExists(t, filepath.Join(vol, tc.want))
	}
}

// TestAPIVolumesMountReadOnly pins makeMounts' ReadOnly: mount.ReadOnly ||
// the volume's Attributes().ReadOnly, true for configMap, secret,
// downwardAPI and projected, so a container cannot change what the kubelet
// writes there.
func TestAPIVolumesMountReadOnly(t *testing.T) {
	objs := &objects{cms: map[string]*v1.ConfigMap{"cfg": {}}, secrets: map[string]*v1.Secret{"s": {}}}
	m, err := New(Config{Layout: podpath.Layout{RootDir: t.TempDir()}, Plugins: []Plugin{EmptyDir{}, HostPath{},
		ConfigMap{Objects: objs}, Secret{Objects: objs}, DownwardAPI{}, Projected{}}})
	require.NoError(t, err)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u1"}, Spec: v1.PodSpec{Volumes: []v1.Volume{
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: t.TempDir()}}},
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}}},
		{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{}}},
		{Name: "proj", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{}}},
	}}}
	for _, tc := range []struct {
		name            string
		asked, readOnly bool
	}{
		{"scratch", false, false}, {"scratch", true, true}, {"host", false, false},
		{"cfg", false, true}, {"sec", false, true}, {"info", false, true}, {"proj", false, true},
	} {
		mounts, err := m.Mounts(pod, &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: tc.name, MountPath: "/x", ReadOnly: tc.asked}}})
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.readOnly, mounts[0].ReadOnly, tc.name)
	}
}

// ContainerMounts expands subPathExpr with the environment the runtime
// resolved (envFrom, configMap and secret refs, status fields included),
// as the kubelet hands its container options' env to makeMounts; the last
// of a name wins, an empty value is missing.
func TestContainerMountsSubPathExpr(t *testing.T) {
	m, err := New(Config{Layout: podpath.Layout{RootDir: t.TempDir()}})
	require.NoError(t, err)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u1"}, Spec: v1.PodSpec{Volumes: []v1.Volume{
		{Name: "logs", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}}}
	vol := filepath.Join(m.layout.Root(), "pods/u1/volumes/kubernetes.io~empty-dir/logs")
	env := []v1.EnvVar{{Name: "FROM_CM", Value: "cm"}, {Name: "IP", Value: "10.0.0.7"}, {Name: "X", Value: "old"}, {Name: "X", Value: "new"},
		{Name: "EMPTY"}}
	for _, tc := range []struct{ expr, want, err string }{
		{expr: "$(FROM_CM)/$(IP)", want: "cm/10.0.0.7"},
		{expr: "$(X)", want: "new"},
		{expr: "$(POD_NAME)", err: "missing value for POD_NAME"}, // only what the runtime passed
		{expr: "$(EMPTY)", err: "missing value for EMPTY"},
	} {
		c := &v1.Container{Name: "c", Env: subPathEnv, VolumeMounts: []v1.VolumeMount{{Name: "logs", MountPath: "/l", SubPathExpr: tc.expr}}}
		mounts, err := m.ContainerMounts(pod, c, env)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.expr)
			continue
		}
		require.NoError(t, err, tc.expr)
		assert.Equal(t, filepath.Join(vol, tc.want), mounts[0].HostPath, tc.expr)
	}
}

// A subPath that exists is mounted as it is (the kubelet creates only a
// missing one): a configMap key, through its ..data link; a new directory
// in an fsGroup's emptyDir gets the volume's mode, setgid included, so
// the group can write there.
func TestSubPathExistingAndOwned(t *testing.T) {
	defer unix.Umask(unix.Umask(0o022))
	gid := testFSGroup()
	objs := &objects{cms: map[string]*v1.ConfigMap{"cfg": {Data: map[string]string{"app.conf": "v1"}}}}
	m, err := New(Config{Layout: podpath.Layout{RootDir: t.TempDir()}, Plugins: []Plugin{EmptyDir{}, ConfigMap{Objects: objs}}})
	require.NoError(t, err)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u1"}, Spec: v1.PodSpec{
		SecurityContext: &v1.PodSecurityContext{FSGroup: &gid},
		Volumes: []v1.Volume{
			{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}}}}}
	mounts, err := m.Mounts(pod, &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{
		{Name: "cfg", MountPath: "/etc/app.conf", SubPath: "app.conf"},
		{Name: "scratch", MountPath: "/work", SubPath: "a/b"}}})
	require.NoError(t, err)
	assert.Equal(t, "v1", read(t, mounts[0].HostPath))
	for _, p := range []string{filepath.Dir(mounts[1].HostPath), mounts[1].HostPath} {
		g, mode := ownerOf(t, p)
		assert.Equal(t, gid, g, p)
		assert.Equal(t, os.ModeSetgid|0o777, mode, p)
	}
}
