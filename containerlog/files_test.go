package containerlog_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodekit-dev/nodekit/containerlog"
)

// touch creates each named file in dir.
func touch(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte(n), 0o640))
	}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := []string{}
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func TestAllLogs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string
		want  []string // without the directory
	}{
		{"live only", []string{"0.log"}, []string{"0.log"}},
		{"no file yet", nil, []string{"0.log"}},
		{"oldest first, leftovers out, others' out",
			[]string{"0.log", "0.log.20260301-120000", "0.log.20260301-110000.gz", "0.log.20260301-100000.gz",
				"0.log.20260301-090000", "0.log.20260301-090000.gz", "0.log.20260301-120500.tmp", "1.log", "1.log.20260301-100000.gz"},
			[]string{"0.log.20260301-090000.gz", "0.log.20260301-100000.gz", "0.log.20260301-110000.gz", "0.log.20260301-120000", "0.log"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			touch(t, dir, tc.files...)
			got, err := containerlog.AllLogs(filepath.Join(dir, "0.log"))
			require.NoError(t, err)
			want := make([]string, len(tc.want))
			for i, w := range tc.want {
				want[i] = filepath.Join(dir, w)
			}
			assert.Equal(t, want, got)
		})
	}
}

func TestRemoveLogs(t *testing.T) {
	dir := t.TempDir()
	touch(t, dir, "0.log", "0.log.20260301-120000", "0.log.20260301-110000.gz", "0.log.20260301-110000.tmp",
		"1.log", "10.log", "1.log.20260301-120000")
	require.NoError(t, containerlog.RemoveLogs(filepath.Join(dir, "1.log")))
	assert.Equal(t, []string{"0.log", "0.log.20260301-110000.gz", "0.log.20260301-110000.tmp", "0.log.20260301-120000", "10.log"}, names(t, dir))
	require.NoError(t, containerlog.RemoveLogs(filepath.Join(dir, "1.log")), "again: nothing left is not an error")
	require.NoError(t, containerlog.RemoveLogs(filepath.Join(dir, "gone", "0.log")), "no directory")
	require.NoError(t, containerlog.RemoveLogs(""))
}

func TestClean(t *testing.T) {
	dir := t.TempDir()
	rt := newFakeRuntime()
	rt.add(t, "c1", filepath.Join(dir, "0.log"))
	rt.add(t, "c2", filepath.Join(dir, "1.log"))
	touch(t, dir, "0.log.20260301-110000.gz", "0.log.20260301-120000")
	m, _ := newManager(t, rt, containerlog.Config{MaxSize: resource.MustParse("-1")}) // removal does not depend on rotation
	require.NoError(t, m.Clean(context.Background(), "c1"))
	assert.Equal(t, []string{"1.log"}, names(t, dir))
	assert.EqualError(t, m.Clean(context.Background(), "c9"), `failed to get container status "c9": container "c9": not found`)
}

// TestRotationDisabled: a negative MaxSize never rotates; Run only waits.
func TestRotationDisabled(t *testing.T) {
	dir := t.TempDir()
	rt := newFakeRuntime()
	rt.add(t, "c1", filepath.Join(dir, "0.log"))
	rt.write(t, "c1", make([]byte, 20<<20))
	m, _ := newManager(t, rt, containerlog.Config{MaxSize: resource.MustParse("-1")})
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, m.Rotate(ctx, "c1"))
	rotated, err := m.RotateAll(ctx)
	require.NoError(t, err)
	assert.Empty(t, rotated)
	assert.Equal(t, []string{"0.log"}, names(t, dir))
	cancel()
	assert.NoError(t, m.Run(ctx))
}
