package volume

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit-dev/nodekit/internal/fsstats"
	"github.com/nodekit-dev/nodekit/podpath"
)

const kib, mib = 1 << 10, 1 << 20

// Volumes set up by their plugins on the temporary directory's filesystem:
// sizes are allocated blocks, at least what was written and a few blocks
// more per entry (exact figures on a tmpfs: tmpfs_integration_test.go).
func TestPodVolumeStats(t *testing.T) {
	root := t.TempDir()
	objs := &objects{cms: map[string]*v1.ConfigMap{"cfg": {Data: map[string]string{"big": strings.Repeat("x", 100*kib), "small": "y"}}}}
	m, err := New(Config{Layout: podpath.Layout{RootDir: root}, Plugins: []Plugin{EmptyDir{}, HostPath{},
		ConfigMap{Objects: objs}, Secret{Objects: objs}, DownwardAPI{}}})
	require.NoError(t, err)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u1"}, Spec: v1.PodSpec{Volumes: []v1.Volume{
		{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: root}}},
		{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "creds", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds"}}},
		{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
			{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
		{Name: "repo", VolumeSource: v1.VolumeSource{GitRepo: &v1.GitRepoVolumeSource{Repository: "r"}}},
	}}}
	for _, name := range []string{"host", "cache", "cfg", "info"} { // creds: not set up yet
		for i := range pod.Spec.Volumes {
			if pod.Spec.Volumes[i].Name == name {
				_, err := m.SetUp(pod, &pod.Spec.Volumes[i])
				require.NoError(t, err, name)
			}
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, "pods/u1/volumes/kubernetes.io~empty-dir/cache/data"), make([]byte, mib), 0o644))

	got, err := m.PodVolumeStats(pod)
	require.NoError(t, err)
	fs, err := fsstats.Statfs(root)
	require.NoError(t, err)
	want := []struct {
		name            string
		written, inodes uint64
	}{
		{"cache", mib, 2}, // the directory and its file
		// The directory, ..<timestamp>/ with big and small, ..data and
		// the keys' symlinks.
		{"cfg", 100*kib + 1, 7},
		{"info", 1, 5},
	}
	require.Len(t, got, len(want), "hostPath, a missing directory and an unserved type are left out")
	for i, w := range want {
		vs := got[i]
		assert.Equal(t, w.name, vs.Name)
		assert.Nil(t, vs.PVCRef)
		require.NotNil(t, vs.UsedBytes, w.name)
		assert.Equal(t, w.inodes, *vs.InodesUsed, w.name)
		assert.GreaterOrEqual(t, *vs.UsedBytes, w.written, w.name)
		assert.LessOrEqual(t, *vs.UsedBytes, w.written+w.inodes*64*kib, w.name)
		assert.Equal(t, fs.Capacity, *vs.CapacityBytes, w.name)
		assert.Equal(t, fs.Inodes, *vs.Inodes, w.name)
		assert.LessOrEqual(t, *vs.AvailableBytes, fs.Capacity, w.name)
		assert.NotNil(t, vs.InodesFree, w.name)
		assert.False(t, vs.Time.IsZero(), w.name)
	}
}

func TestPodVolumeStatsNamesWhatItCannotMeasure(t *testing.T) {
	m, err := New(Config{Layout: podpath.Layout{RootDir: t.TempDir()}})
	require.NoError(t, err)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}, Spec: v1.PodSpec{Volumes: []v1.Volume{
		{Name: "a/b", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "fine", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
	}}}
	_, err = m.SetUp(pod, &pod.Spec.Volumes[1])
	require.NoError(t, err)
	got, err := m.PodVolumeStats(pod)
	assert.ErrorContains(t, err, `volumes[a/b]: spec.volumes.name: Invalid value: "a/b"`)
	require.Len(t, got, 1, "the others are measured")
	assert.Equal(t, "fine", got[0].Name)
}
