package podpath

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

func TestValidateUID(t *testing.T) {
	for _, tc := range []struct {
		uid  string
		want string // "" = valid
	}{
		{"3f1f2a5e-8b0c-4a8e-9d3e-0c1e5b7a9f21", ""},
		{"d41d8cd98f00b204e9800998ecf8427e", ""},
		{"Static-Pod-1", ""},
		{"a", ""},
		{strings.Repeat("a", MaxUIDLen), ""},
		{"", "must not be empty"},
		{strings.Repeat("a", MaxUIDLen+1), "must be no more than 128 characters"},
		{"..", "a pod UID must consist of"},
		{".", "a pod UID must consist of"},
		{"../../victim", "a pod UID must consist of"},
		{"a/b", "a pod UID must consist of"},
		{"a_b", "a pod UID must consist of"},
		{"-a", "a pod UID must consist of"},
		{"a-", "a pod UID must consist of"},
		{"a\x00b", "a pod UID must consist of"},
		{"a b", "a pod UID must consist of"},
		{"ü", "a pod UID must consist of"},
	} {
		msgs := ValidateUID(tc.uid)
		if tc.want == "" {
			assert.Empty(t, msgs, "%q", tc.uid)
			continue
		}
		require.Len(t, msgs, 1, "%q", tc.uid)
		assert.Contains(t, msgs[0], tc.want, "%q", tc.uid)
	}
}

func TestJoinRefusesToLeaveBase(t *testing.T) {
	for _, tc := range []struct {
		elems []string
		want  string // "" = ok
	}{
		{[]string{"pods", "abc"}, ""},
		{[]string{"a..b"}, ""},
		{[]string{".."}, `must not be "." or ".."`},
		{[]string{"."}, `must not be "." or ".."`},
		{[]string{""}, "must not be empty"},
		{[]string{"../../victim"}, "must not contain '/'"},
		{[]string{"/etc"}, "must not contain '/'"},
		{[]string{"a\x00"}, "NUL"},
		{[]string{strings.Repeat("x", 256)}, "no more than 255 bytes"},
	} {
		p, err := Join("/base", tc.elems...)
		if tc.want == "" {
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(p, "/base/"), p)
			continue
		}
		require.Error(t, err, "%q", tc.elems)
		assert.Contains(t, err.Error(), tc.want)
		assert.Contains(t, err.Error(), "under /base")
	}
	_, err := Join("", "a")
	assert.ErrorContains(t, err, "empty base")
}

func TestJoinLocal(t *testing.T) {
	for rel, ok := range map[string]bool{
		"a": true, "a/b/c": true, "a/../b": true, "./a": true,
		"../a": false, "a/../../b": false, "/etc": false, "": false, "a\x00": false,
		strings.Repeat("x", 256): false, "a/" + strings.Repeat("x", 255): true,
	} {
		p, err := JoinLocal("/v", rel)
		if ok {
			require.NoError(t, err, "%q", rel)
			assert.True(t, strings.HasPrefix(p, "/v/"), p)
		} else {
			assert.Error(t, err, "%q", rel)
		}
	}
}

func TestLayoutNamesTheField(t *testing.T) {
	l := Layout{RootDir: "/r", PodLogsDir: "/l"}
	p, err := l.PodDir("u1")
	require.NoError(t, err)
	assert.Equal(t, "/r/pods/u1", p)
	p, err = l.PodVolumeDir("u1", "kubernetes.io~empty-dir", "data")
	require.NoError(t, err)
	assert.Equal(t, "/r/pods/u1/volumes/kubernetes.io~empty-dir/data", p)
	p, err = l.PodContainerDir("u1", "c")
	require.NoError(t, err)
	assert.Equal(t, "/r/pods/u1/containers/c", p)
	p, err = l.PodLogsDirectory("default", "web-n1", "u1")
	require.NoError(t, err)
	assert.Equal(t, "/l/default_web-n1_u1", p)
	p, err = ContainerLogPath("c", 3)
	require.NoError(t, err)
	assert.Equal(t, "c/3.log", p)
	assert.Equal(t, "/var/lib/kubelet/pods", Layout{}.PodsDir(), "the kubelet's defaults")
	assert.Equal(t, "/var/log/pods", Layout{}.Logs())

	long := strings.Repeat("u", 2000)
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"traversal uid", func() error { _, err := l.PodDir("../../victim"); return err }, `metadata.uid: Invalid value: "../../victim"`},
		{"dot-dot uid", func() error { _, err := l.PodDir(".."); return err }, `metadata.uid: Invalid value: ".."`},
		{"empty uid", func() error { _, err := l.PodDir(""); return err }, "metadata.uid: Invalid value: \"\": must not be empty"},
		{"long uid, value cut", func() error { _, err := l.PodDir(types.UID(long)); return err }, "(2000 bytes): must be no more than 128"},
		{"volume name", func() error { _, err := l.PodVolumeDir("u1", "p", "../x"); return err }, `spec.volumes.name: Invalid value: "../x"`},
		{"plugin", func() error { _, err := l.PodVolumeDir("u1", "..", "x"); return err }, `volume plugin: Invalid value: ".."`},
		{"container", func() error { _, err := l.PodContainerDir("u1", "a/b"); return err }, `spec.containers.name: Invalid value: "a/b"`},
		{"log namespace", func() error { _, err := l.PodLogsDirectory("../x", "n", "u"); return err }, `metadata.namespace: Invalid value: "../x"`},
		{"log name with _", func() error { _, err := l.PodLogsDirectory("ns", "a_b", "u"); return err }, `metadata.name: Invalid value: "a_b": must not contain '_'`},
		{"log uid", func() error { _, err := l.PodLogsDirectory("ns", "n", "../../../x"); return err }, `metadata.uid: Invalid value: "../../../x"`},
		{"log dir name too long", func() error {
			_, err := l.PodLogsDirectory(strings.Repeat("n", 63), strings.Repeat("a", 200), "u1")
			return err
		}, "the pod's log directory name <namespace>_<name>_<uid> would be 267 bytes, over the 255"},
		{"container log path", func() error { _, err := ContainerLogPath("..", 0); return err }, `spec.containers.name: Invalid value: ".."`},
	} {
		err := tc.call()
		require.Error(t, err, tc.name)
		assert.Contains(t, err.Error(), tc.want, tc.name)
	}
}

func TestParsePodLogsDirName(t *testing.T) {
	name, err := PodLogsDirName("kube-system", "etcd-n1", "d41d8cd98f00b204e9800998ecf8427e")
	require.NoError(t, err)
	ns, n, uid, ok := ParsePodLogsDirName(name)
	require.True(t, ok)
	assert.Equal(t, []string{"kube-system", "etcd-n1", "d41d8cd98f00b204e9800998ecf8427e"}, []string{ns, n, string(uid)})
	for _, bad := range []string{"x", "a_b", "a_b_c_d", "_b_c", "a__c", "a_b_..", "a_b_c d"} {
		_, _, _, ok := ParsePodLogsDirName(bad)
		assert.False(t, ok, bad)
	}
}

// TestFileOpsStayBelowBase: a symlink planted below the base (as a
// container could in a volume it writes to) does not lead MkdirAllIn or
// RemoveAllIn outside the base.
func TestFileOpsStayBelowBase(t *testing.T) {
	world := t.TempDir()
	base := filepath.Join(world, "base")
	outside := filepath.Join(world, "outside")
	require.NoError(t, os.MkdirAll(filepath.Join(outside, "keep"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "keep", "f"), []byte("x"), 0o644))

	p, err := MkdirAllIn(base, "pods/u1/volumes/v", 0o755)
	require.NoError(t, err)
	assert.DirExists(t, p)
	require.NoError(t, os.Symlink(outside, filepath.Join(p, "escape")))

	_, err = MkdirAllIn(p, "escape/new", 0o755)
	require.Error(t, err, "creating through a symlink out of the base")
	assert.NoDirExists(t, filepath.Join(outside, "new"))
	_, err = MkdirAllIn(base, "../outside/new", 0o755)
	require.Error(t, err)
	assert.NoDirExists(t, filepath.Join(outside, "new"))

	require.Error(t, RemoveAllIn(base, "."), "the base itself")
	require.Error(t, RemoveAllIn(base, ""))
	require.Error(t, RemoveAllIn(base, "../outside"))
	require.Error(t, RemoveAllIn(p, "escape/keep"), "through the link out of the base")
	assert.FileExists(t, filepath.Join(outside, "keep", "f"))
	require.NoError(t, RemoveAllIn(base, "pods/u1"))
	assert.NoDirExists(t, filepath.Join(base, "pods", "u1"))
	assert.FileExists(t, filepath.Join(outside, "keep", "f"), "the link was removed, not followed")
	require.NoError(t, RemoveAllIn(filepath.Join(world, "missing"), "x"), "a missing base is nothing to remove")
}
