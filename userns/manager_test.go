package userns

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit-dev/nodekit/podpath"
)

var supported = HandlersFunc(func(string) (bool, error) { return true, nil })

// fixedRange is a Range of slots [off, off+n) of 65536 IDs.
func fixedRange(off, n uint32) func(uint32) (uint32, uint32, error) {
	return func(uint32) (uint32, uint32, error) { return off * unitLength, n * unitLength, nil }
}

func newManager(t *testing.T, root string, cfg Config) *Manager {
	t.Helper()
	cfg.Layout = podpath.Layout{RootDir: root}
	if cfg.Handlers == nil {
		cfg.Handlers = supported
	}
	if cfg.Rand == nil {
		cfg.Rand = func(int) int { return 0 }
	}
	m, err := New(cfg)
	require.NoError(t, err)
	return m
}

func userPod(uid string, hostUsers *bool) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "ns", UID: types.UID(uid)},
		Spec: v1.PodSpec{HostUsers: hostUsers}}
}

func TestNewRefusesTheKubeletsBadRanges(t *testing.T) {
	for _, tc := range []struct {
		name      string
		idsPerPod uint32
		maxPods   int
		first     uint32
		length    uint32
		rangeErr  error
		want      string
	}{
		{name: "ids per pod not a multiple of 65536", idsPerPod: 65537, first: 65536, length: 1 << 30,
			want: "kubelet user namespace length 65537 is not a multiple of 65536"},
		{name: "first not aligned", first: 70000, length: 1 << 30,
			want: "kubelet user assigned ID 70000 is not a multiple of 65536"},
		{name: "first maps host root", first: 0, length: 1 << 30,
			want: "kubelet user assigned ID 0 must be greater or equal to 65536"},
		{name: "first below ids per pod", idsPerPod: 131072, first: 65536 * 2, length: 1 << 30, maxPods: 1},
		{name: "length not aligned", first: 65536, length: 100000,
			want: "kubelet user assigned IDs length 100000 is not a multiple of 65536"},
		{name: "too few slots for max pods", first: 65536, length: 65536 * 109,
			want: "kubelet user assigned IDs are not enough to support 110 pods"},
		{name: "exactly max pods", first: 65536, length: 65536 * 110},
		{name: "range error", rangeErr: errors.New("boom"), want: "kubelet mappings: boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Config{Layout: podpath.Layout{RootDir: t.TempDir()}, Handlers: supported,
				IDsPerPod: tc.idsPerPod, MaxPods: tc.maxPods,
				Range: func(uint32) (uint32, uint32, error) { return tc.first, tc.length, tc.rangeErr }})
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tc.want)
		})
	}
	_, err := New(Config{})
	assert.EqualError(t, err, "userns: Config.Handlers is required")
}

func TestPodMapping(t *testing.T) {
	no, yes := new(bool), new(bool)
	*yes = true
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		handler  string
		handlers Handlers
		wantID   uint32
		wantLen  uint32
		wantErr  string
	}{
		{name: "host users unset", pod: userPod("a", nil)},
		{name: "host users true", pod: userPod("a", yes)},
		{name: "host users false", pod: userPod("a", no), wantID: 2 * unitLength, wantLen: unitLength},
		{name: "runtime without support", pod: userPod("a", no),
			handlers: HandlersFunc(func(string) (bool, error) { return false, nil }),
			wantErr:  "can't set `spec.hostUsers: false`, runtime does not support user namespaces"},
		{name: "handler without support", pod: userPod("a", no), handler: "kata",
			handlers: HandlersFunc(func(string) (bool, error) { return false, nil }),
			wantErr:  "can't set `spec.hostUsers: false`, RuntimeClass handler \"kata\" does not support user namespaces"},
		{name: "unknown handler", pod: userPod("a", no), handler: "gone",
			handlers: HandlersFunc(func(h string) (bool, error) { return false, errors.New(`the handler "gone" is not known`) }),
			wantErr:  "can't set `spec.hostUsers: false`, RuntimeClass handler \"gone\" does not support user namespaces: the handler \"gone\" is not known"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newManager(t, t.TempDir(), Config{Range: fixedRange(2, 200), Handlers: tc.handlers})
			id, length, err := m.PodMapping(tc.pod, tc.handler)
			if tc.wantErr != "" {
				assert.EqualError(t, err, tc.wantErr)
				var ue *UnsupportedError
				assert.ErrorAs(t, err, &ue)
				_, ok := m.Allocated(tc.pod.UID)
				assert.False(t, ok, "nothing allocated")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantID, id)
			assert.Equal(t, tc.wantLen, length)
		})
	}
}

func TestPodMappingAllocatesDistinctRangesUntilExhausted(t *testing.T) {
	root := t.TempDir()
	no := new(bool)
	m := newManager(t, root, Config{Range: fixedRange(1, 3), MaxPods: 3, Rand: func(int) int { return 1 }})
	got := map[uint32]string{}
	for _, uid := range []string{"p1", "p2", "p3"} {
		id, _, err := m.PodMapping(userPod(uid, no), "")
		require.NoError(t, err)
		require.NotContains(t, got, id, "%s got %s's range", uid, got[id])
		got[id] = uid
		again, _, err := m.PodMapping(userPod(uid, no), "")
		require.NoError(t, err)
		assert.Equal(t, id, again, "a pod keeps its range")
	}
	// The search starts at index 1: p1 gets slot 2 (IDs 131072...), then 3, then 1 wrapped.
	assert.Equal(t, map[uint32]string{2 * unitLength: "p1", 3 * unitLength: "p2", unitLength: "p3"}, got)

	_, _, err := m.PodMapping(userPod("p4", no), "")
	assert.ErrorIs(t, err, ErrExhausted)
	assert.EqualError(t, err, "create user namespace: could not find an empty slot to allocate a user namespace")
	assert.NoFileExists(t, filepath.Join(root, "pods", "p4", MappingsFile))

	m.Release("p2")
	assert.NoFileExists(t, filepath.Join(root, "pods", "p2", MappingsFile))
	id, _, err := m.PodMapping(userPod("p4", no), "")
	require.NoError(t, err)
	assert.Equal(t, uint32(3*unitLength), id, "p2's released range is taken again")
}

func TestAllocationsSurviveARestart(t *testing.T) {
	root := t.TempDir()
	no := new(bool)
	m := newManager(t, root, Config{Range: fixedRange(1, 200)})
	a, _, err := m.PodMapping(userPod("a", no), "")
	require.NoError(t, err)
	b, _, err := m.PodMapping(userPod("b", no), "")
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "pods", "hostusers"), 0o750))
	data, err := os.ReadFile(filepath.Join(root, "pods", "a", MappingsFile))
	require.NoError(t, err)
	assert.JSONEq(t, `{"uidMappings":[{"hostId":65536,"containerId":0,"length":65536}],
		"gidMappings":[{"hostId":65536,"containerId":0,"length":65536}]}`, string(data), "the kubelet's format")

	restarted := newManager(t, root, Config{Range: fixedRange(1, 200)})
	for uid, want := range map[types.UID]uint32{"a": a, "b": b} {
		got, ok := restarted.Allocated(uid)
		assert.True(t, ok, "%s read back", uid)
		assert.Equal(t, want, got, uid)
	}
	c, _, err := restarted.PodMapping(userPod("c", no), "")
	require.NoError(t, err)
	assert.NotContains(t, []uint32{a, b}, c, "a new pod does not get a restored range")
	again, _, err := restarted.PodMapping(userPod("a", no), "")
	require.NoError(t, err)
	assert.Equal(t, a, again)

	restarted.Release("a")
	_, ok := restarted.Allocated("a")
	assert.False(t, ok)
	third := newManager(t, root, Config{Range: fixedRange(1, 200)})
	_, ok = third.Allocated("a")
	assert.False(t, ok, "a released range is not restored")
}

func TestNewRefusesBadFiles(t *testing.T) {
	for _, tc := range []struct {
		name, content, want string
	}{
		{name: "not json", content: "{", want: "invalid user namespace mappings file"},
		{name: "two mappings", content: `{"uidMappings":[{"hostId":65536,"length":65536},{"hostId":131072,"length":65536}],"gidMappings":[]}`,
			want: "no more than one mapping allowed"},
		{name: "uid and gid differ", content: `{"uidMappings":[{"hostId":65536,"length":65536}],"gidMappings":[{"hostId":131072,"length":65536}]}`,
			want: "GID and UID mapping should be identical"},
		{name: "root not mapped", content: `{"uidMappings":[{"hostId":65536,"containerId":1,"length":65536}],"gidMappings":[{"hostId":65536,"containerId":1,"length":65536}]}`,
			want: "UID 0 must be mapped"},
		{name: "wrong length", content: `{"uidMappings":[{"hostId":65536,"length":1000}],"gidMappings":[{"hostId":65536,"length":1000}]}`,
			want: "wrong user namespace length 1000"},
		{name: "unaligned", content: `{"uidMappings":[{"hostId":65537,"length":65536}],"gidMappings":[{"hostId":65537,"length":65536}]}`,
			want: "wrong user namespace offset specified 65537"},
		{name: "out of range", content: `{"uidMappings":[{"hostId":0,"length":65536}],"gidMappings":[{"hostId":0,"length":65536}]}`,
			want: "id 0 is out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "pods", "p")
			require.NoError(t, os.MkdirAll(dir, 0o750))
			require.NoError(t, os.WriteFile(filepath.Join(dir, MappingsFile), []byte(tc.content), 0o600))
			_, err := New(Config{Layout: podpath.Layout{RootDir: root}, Handlers: supported, Range: fixedRange(1, 200)})
			require.Error(t, err)
			assert.Contains(t, err.Error(), `record pod mappings for existing pod "p": `)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestTwoPodsClaimingOneRange(t *testing.T) {
	root := t.TempDir()
	content := `{"uidMappings":[{"hostId":65536,"containerId":0,"length":65536}],"gidMappings":[{"hostId":65536,"containerId":0,"length":65536}]}`
	for _, uid := range []string{"a", "b"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, "pods", uid), 0o750))
		require.NoError(t, os.WriteFile(filepath.Join(root, "pods", uid, MappingsFile), []byte(content), 0o600))
	}
	_, err := New(Config{Layout: podpath.Layout{RootDir: root}, Handlers: supported, Range: fixedRange(1, 200)})
	assert.ErrorContains(t, err, `range picked for pod "b" already taken`)
}

func TestCleanupOrphans(t *testing.T) {
	root := t.TempDir()
	no := new(bool)
	m := newManager(t, root, Config{Range: fixedRange(1, 200)})
	for _, uid := range []string{"running", "known", "orphan", "dirgone"} {
		_, _, err := m.PodMapping(userPod(uid, no), "")
		require.NoError(t, err)
	}
	require.NoError(t, os.RemoveAll(filepath.Join(root, "pods", "dirgone")))
	require.NoError(t, m.CleanupOrphans([]types.UID{"known", "running", "dirgone"}))
	for uid, want := range map[types.UID]bool{"running": true, "known": true, "orphan": false, "dirgone": false} {
		_, ok := m.Allocated(uid)
		assert.Equal(t, want, ok, uid)
	}
	assert.NoFileExists(t, filepath.Join(root, "pods", "orphan", MappingsFile))
	assert.FileExists(t, filepath.Join(root, "pods", "known", MappingsFile))
}
