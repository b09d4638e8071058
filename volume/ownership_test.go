package volume

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/podpath"
)

// testFSGroup is a group the test may chown to: any as root, else its own
// (the modes are checked either way).
func testFSGroup() int64 {
	if os.Geteuid() == 0 {
		return 4321
	}
	return int64(os.Getgid())
}

func ownerOf(t *testing.T, p string) (int64, os.FileMode) {
	t.Helper()
	info, err := os.Stat(p)
	require.NoError(t, err)
	return int64(info.Sys().(*syscall.Stat_t).Gid), info.Mode() &^ os.ModeType
}

// TestFSGroupOwnership pins the kubelet's SetVolumeOwnership for the
// volumes that manage ownership: everything is chowned to the pod's
// fsGroup, directories get setgid (new files inherit the group) and
// group rwx, files group rw (emptyDir) or group r (configMap, secret,
// downwardAPI, projected: read-only volumes); a projected token is 0600
// before that when fsGroup is set, so 0640 after. hostPath is left alone.
// "Secrets should be consumable from pods in volume as non-root with
// defaultMode and fsGroup set", and the Projected secret equivalent.
func TestFSGroupOwnership(t *testing.T) {
	gid := testFSGroup()
	clk := clocktesting.NewFakeClock(time.Now())
	tokens, err := NewTokens(&tokenServer{clock: clk}, clk)
	require.NoError(t, err)
	objs := &objects{
		cms:     map[string]*v1.ConfigMap{"cfg": {Data: map[string]string{"k": "v"}}},
		secrets: map[string]*v1.Secret{"creds": {Data: map[string][]byte{"pw": []byte("s3cret")}}},
	}
	m, err := New(Config{Layout: podpath.Layout{RootDir: t.TempDir()}, Plugins: []Plugin{EmptyDir{}, HostPath{},
		ConfigMap{Objects: objs}, Secret{Objects: objs}, DownwardAPI{}, Projected{Objects: objs, Tokens: tokens}}})
	require.NoError(t, err)
	host := t.TempDir()
	hostGID, hostMode := ownerOf(t, host)
	creds := v1.LocalObjectReference{Name: "creds"}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}, Spec: v1.PodSpec{
		SecurityContext: &v1.PodSecurityContext{FSGroup: &gid, RunAsUser: ptr.To[int64](1000)},
		Volumes: []v1.Volume{
			{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: host}}},
			{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
			{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds", DefaultMode: ptr.To[int32](0o400)}}},
			{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{
				Items: []v1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
			{Name: "proj", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o400),
				Sources: []v1.VolumeProjection{{Secret: &v1.SecretProjection{LocalObjectReference: creds}},
					{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}}}}}},
		}}}
	dirs := map[string]string{}
	for i := range pod.Spec.Volumes {
		dir, err := m.SetUp(pod, &pod.Spec.Volumes[i])
		require.NoError(t, err, pod.Spec.Volumes[i].Name)
		dirs[pod.Spec.Volumes[i].Name] = dir
	}
	const dirRO = os.ModeSetgid | 0o777 // 0777 root | r-x for the group | setgid
	for _, tc := range []struct {
		rule, path string
		gid        int64
		mode       os.FileMode
	}{
		{"emptyDir: rwMask|execMask|setgid on its directory", "scratch", gid, os.ModeSetgid | 0o777},
		{"hostPath does not manage ownership", "host", hostGID, hostMode},
		{"configMap root: roMask|execMask|setgid", "cfg", gid, dirRO},
		{"configMap file: 0644 already has group read", "cfg/k", gid, 0o644},
		{"configMap data directory: 0755|roMask|execMask|setgid", "cfg/..data", gid, os.ModeSetgid | 0o755},
		{"secret defaultMode 0400 gains group read", "sec/pw", gid, 0o440},
		{"secret root", "sec", gid, dirRO},
		{"downwardAPI file", "info/name", gid, 0o644},
		{"projected secret source", "proj/pw", gid, 0o440},
		{"projected token: 0600 with fsGroup, then group read", "proj/token", gid, 0o640},
	} {
		vol, file, _ := strings.Cut(tc.path, "/")
		g, mode := ownerOf(t, filepath.Join(dirs[vol], file))
		assert.Equal(t, tc.gid, g, "%s: %s gid", tc.rule, tc.path)
		assert.Equal(t, tc.mode, mode, "%s: %s mode %v", tc.rule, tc.path, mode)
	}

	// emptyDir is set up once: a file the container made later keeps its mode.
	mine := filepath.Join(dirs["scratch"], "mine")
	require.NoError(t, os.WriteFile(mine, nil, 0o600))
	require.NoError(t, m.SetUpAll(pod))
	_, mode := ownerOf(t, mine)
	assert.Equal(t, os.FileMode(0o600), mode, "emptyDir ownership is set once, at set-up")
	// A changed Secret is written again, and owned again.
	objs.secrets["creds"] = &v1.Secret{Data: map[string][]byte{"pw": []byte("new"), "user": []byte("u")}}
	require.NoError(t, m.SetUpAll(pod))
	g, mode := ownerOf(t, filepath.Join(dirs["sec"], "user"))
	assert.Equal(t, gid, g)
	assert.Equal(t, os.FileMode(0o440), mode, "a new key of an updated Secret")
}

// TestSetVolumeOwnershipPolicy pins the kubelet's fsGroupChangePolicy:
// OnRootMismatch skips the walk when the root already has the group,
// setgid and the mask's bits (rw or r, and x, for the group); Always (or
// unset) walks every time. Symlinks are not followed or changed.
func TestSetVolumeOwnershipPolicy(t *testing.T) {
	gid := testFSGroup()
	onMismatch, always := v1.FSGroupChangeOnRootMismatch, v1.FSGroupChangeAlways
	for _, tc := range []struct {
		name      string
		policy    *v1.PodFSGroupChangePolicy
		rootMode  os.FileMode // before; with the group already set when matching
		readOnly  bool
		fileAfter os.FileMode
	}{
		{"unset policy walks", nil, os.ModeSetgid | 0o770, false, 0o660},
		{"Always walks", &always, os.ModeSetgid | 0o770, false, 0o660},
		{"OnRootMismatch, root matches: skipped", &onMismatch, os.ModeSetgid | 0o770, false, 0o600},
		{"OnRootMismatch, root lacks setgid: walks", &onMismatch, 0o770, false, 0o660},
		{"OnRootMismatch, root lacks group write: walks", &onMismatch, os.ModeSetgid | 0o750, false, 0o660},
		{"OnRootMismatch, read-only needs only r-x: skipped", &onMismatch, os.ModeSetgid | 0o750, true, 0o600},
		{"read-only walk adds group read", nil, 0o755, true, 0o640},
	} {
		dir := t.TempDir()
		file := filepath.Join(dir, "f")
		require.NoError(t, os.WriteFile(file, nil, 0o600))
		require.NoError(t, os.Chmod(file, 0o600))
		require.NoError(t, os.Symlink("/etc/hostname", filepath.Join(dir, "out")))
		require.NoError(t, os.Chown(dir, -1, int(gid)))
		require.NoError(t, os.Chmod(dir, tc.rootMode))
		require.NoError(t, SetVolumeOwnership(dir, &gid, tc.policy, tc.readOnly), tc.name)
		g, mode := ownerOf(t, file)
		assert.Equal(t, tc.fileAfter, mode, tc.name)
		if tc.fileAfter != 0o600 {
			assert.Equal(t, gid, g, tc.name)
			_, rootMode := ownerOf(t, dir)
			assert.NotZero(t, rootMode&os.ModeSetgid, tc.name)
		}
	}
	host, err := os.Stat("/etc/hostname")
	if err == nil {
		assert.NotEqual(t, gid, int64(host.Sys().(*syscall.Stat_t).Gid), "a symlink out is not followed")
	}
	assert.NoError(t, SetVolumeOwnership(t.TempDir(), nil, nil, false), "no fsGroup: nothing to do")
}
