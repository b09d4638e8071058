package podsource

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/internal/poll"
)

// deadline is how fast a change must reach the stream.
const deadline = time.Second

// stream follows a mux's updates and keeps the resulting pods by UID.
type stream struct {
	mu   sync.Mutex
	pods map[types.UID]*v1.Pod
	ops  []emitted
}

func (s *stream) apply(u PodUpdate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ops = append(s.ops, emitted{u.Op, u.Source, names(u.Pods)})
	for _, p := range u.Pods {
		if u.Op == REMOVE {
			delete(s.pods, p.UID)
		} else {
			s.pods[p.UID] = p
		}
	}
}

// byName is the current pods by name.
func (s *stream) byName() map[string]*v1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]*v1.Pod{}
	for _, p := range s.pods {
		out[p.Name] = p
	}
	return out
}

func (s *stream) opsSince(n int) []emitted {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]emitted(nil), s.ops[n:]...)
}

func (s *stream) nops() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ops)
}

type fileHarness struct {
	dir     string
	mux     *Mux
	src     *FileSource
	clock   *clocktesting.FakeClock
	st      *stream
	metrics *Metrics
}

// startFile runs a FileSource on path with a fake clock (so only fsnotify
// drives changes, unless the test steps the clock) and follows its stream.
func startFile(t *testing.T, path string) *fileHarness {
	t.Helper()
	h := &fileHarness{dir: path, clock: clocktesting.NewFakeClock(time.Now()), st: &stream{pods: map[types.UID]*v1.Pod{}}, metrics: NewMetrics()}
	h.mux = NewMux(MuxConfig{Clock: h.clock, Metrics: h.metrics})
	var err error
	h.src, err = NewFileSource(FileConfig{Path: path, NodeName: node, Clock: h.clock, Metrics: h.metrics}, h.mux)
	require.NoError(t, err)
	h.mux.Register(h.src.Name())
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		assert.NoError(t, h.src.Run(ctx))
	}()
	go func() {
		defer wg.Done()
		for {
			select {
			case u := <-h.mux.Updates():
				h.st.apply(u)
			case <-ctx.Done():
				return
			}
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	poll.Eventually(t, h.mux.AllSourcesReady, 5*time.Second, time.Millisecond)
	return h
}

func write(t *testing.T, path, data string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
}

func image(h *fileHarness, name string) string {
	p := h.st.byName()[name]
	if p == nil {
		return ""
	}
	return p.Spec.Containers[0].Image
}

func TestFileDirectoryLifecycle(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "pre.yaml"), manifest("pre", "i:1"))
	write(t, filepath.Join(dir, ".hidden.yaml"), manifest("hidden", "i:1"))
	h := startFile(t, dir)
	poll.Eventually(t, func() bool { return image(h, "pre-node-1") == "i:1" }, deadline, 2*time.Millisecond, "existing file")
	assert.Len(t, h.st.byName(), 1, "dotfiles are ignored")

	web := filepath.Join(dir, "web.yaml")
	steps := []struct {
		name string
		do   func()
		want func() bool
	}{
		{"create", func() { write(t, web, manifest("web", "i:1")) }, func() bool { return image(h, "web-node-1") == "i:1" }},
		{"edit in place", func() { write(t, web, manifest("web", "i:2")) }, func() bool { return image(h, "web-node-1") == "i:2" }},
		{"editor: dot temp file renamed over", func() {
			tmp := filepath.Join(dir, ".web.yaml.swp")
			write(t, tmp, manifest("web", "i:3"))
			require.NoError(t, os.Rename(tmp, web))
		}, func() bool { return image(h, "web-node-1") == "i:3" }},
		{"editor: temp file in another dir renamed over", func() {
			tmp := filepath.Join(t.TempDir(), "web.yaml")
			write(t, tmp, manifest("web", "i:4"))
			require.NoError(t, os.Rename(tmp, web))
		}, func() bool { return image(h, "web-node-1") == "i:4" }},
		{"editor: backup rename then new file (vim)", func() {
			require.NoError(t, os.Rename(web, filepath.Join(dir, ".web.yaml~")))
			write(t, web, manifest("web", "i:5"))
			require.NoError(t, os.Remove(filepath.Join(dir, ".web.yaml~")))
		}, func() bool { return image(h, "web-node-1") == "i:5" }},
		{"delete", func() { require.NoError(t, os.Remove(web)) }, func() bool { return h.st.byName()["web-node-1"] == nil }},
		{"json manifest", func() {
			write(t, filepath.Join(dir, "j.json"), `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j"},"spec":{"containers":[{"name":"c","image":"j:1"}]}}`)
		}, func() bool { return image(h, "j-node-1") == "j:1" }},
	}
	for _, st := range steps {
		st.do()
		poll.Eventually(t, st.want, deadline, 2*time.Millisecond, st.name)
	}
	assert.Contains(t, h.st.byName(), "pre-node-1")
	assert.Len(t, h.st.byName(), 2)
}

func TestFileEditIsRemoveThenAddWithNewUID(t *testing.T) {
	dir := t.TempDir()
	web := filepath.Join(dir, "web.yaml")
	write(t, web, manifest("web", "i:1"))
	h := startFile(t, dir)
	poll.Eventually(t, func() bool { return image(h, "web-node-1") == "i:1" }, deadline, 2*time.Millisecond, "create")
	uid1 := h.st.byName()["web-node-1"].UID
	n := h.st.nops()
	write(t, web, manifest("web", "i:2"))
	poll.Eventually(t, func() bool { return image(h, "web-node-1") == "i:2" }, deadline, 2*time.Millisecond, "edit")
	assert.NotEqual(t, uid1, h.st.byName()["web-node-1"].UID)
	assert.Equal(t, []emitted{{REMOVE, "file", []string{"web-node-1"}}, {ADD, "file", []string{"web-node-1"}}}, h.st.opsSince(n))

	// A manifest with an explicit UID keeps it: an edit is an UPDATE.
	n = h.st.nops()
	withUID := "apiVersion: v1\nkind: Pod\nmetadata: {name: fixed, uid: u-1}\nspec: {containers: [{name: c, image: 'i:%d'}]}\n"
	write(t, filepath.Join(dir, "fixed.yaml"), fmt.Sprintf(withUID, 1))
	poll.Eventually(t, func() bool { return image(h, "fixed-node-1") == "i:1" }, deadline, 2*time.Millisecond, "create fixed")
	write(t, filepath.Join(dir, "fixed.yaml"), fmt.Sprintf(withUID, 2))
	poll.Eventually(t, func() bool { return image(h, "fixed-node-1") == "i:2" }, deadline, 2*time.Millisecond, "edit fixed")
	assert.Equal(t, []emitted{{ADD, "file", []string{"fixed-node-1"}}, {UPDATE, "file", []string{"fixed-node-1"}}}, h.st.opsSince(n))
}

func TestFileInvalidKeepsLastGood(t *testing.T) {
	dir := t.TempDir()
	web := filepath.Join(dir, "web.yaml")
	write(t, web, manifest("web", "i:1"))
	h := startFile(t, dir)
	poll.Eventually(t, func() bool { return image(h, "web-node-1") == "i:1" }, deadline, 2*time.Millisecond, "create")
	n := h.st.nops()

	write(t, web, "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: c}]}\n")
	poll.Eventually(t, func() bool { return len(h.src.Errors()) == 1 }, deadline, 2*time.Millisecond, "error reported")
	assert.Contains(t, h.src.Errors()[0].Error(), web)
	assert.Contains(t, h.src.Errors()[0].Error(), "spec.containers[0].image: Required value")
	assert.Equal(t, 1.0, testutil.ToFloat64(h.metrics.invalid.WithLabelValues("file")))
	write(t, filepath.Join(dir, "bad-new.yaml"), "kind: [")
	poll.Eventually(t, func() bool { return len(h.src.Errors()) == 2 }, deadline, 2*time.Millisecond, "second error")
	write(t, filepath.Join(dir, "empty.yaml"), "") // being written: no pod, no error
	write(t, filepath.Join(dir, "other.yaml"), manifest("other", "o:1"))
	poll.Eventually(t, func() bool { return image(h, "other-node-1") == "o:1" }, deadline, 2*time.Millisecond, "other pods keep flowing")
	assert.Equal(t, "i:1", image(h, "web-node-1"), "last good version kept")
	assert.Equal(t, []emitted{{ADD, "file", []string{"other-node-1"}}}, h.st.opsSince(n))

	write(t, web, manifest("web", "i:2"))
	poll.Eventually(t, func() bool { return image(h, "web-node-1") == "i:2" }, deadline, 2*time.Millisecond, "fixed")
	assert.Len(t, h.src.Errors(), 1)
	write(t, web, "{")
	poll.Eventually(t, func() bool { return len(h.src.Errors()) == 2 }, deadline, 2*time.Millisecond, "broken again")
	require.NoError(t, os.Remove(web))
	poll.Eventually(t, func() bool { return h.st.byName()["web-node-1"] == nil }, deadline, 2*time.Millisecond, "deleted while invalid")
}

func TestFileSymlinks(t *testing.T) {
	dir, ext := t.TempDir(), t.TempDir()
	target := filepath.Join(ext, "real.yaml")
	write(t, target, manifest("linked", "l:1"))
	h := startFile(t, dir)
	link := filepath.Join(dir, "linked.yaml")
	require.NoError(t, os.Symlink(target, link))
	poll.Eventually(t, func() bool { return image(h, "linked-node-1") == "l:1" }, deadline, 2*time.Millisecond, "symlink created")
	write(t, target, manifest("linked", "l:2"))
	poll.Eventually(t, func() bool { return image(h, "linked-node-1") == "l:2" }, deadline, 2*time.Millisecond, "target edited")
	tmp := filepath.Join(ext, ".tmp")
	write(t, tmp, manifest("linked", "l:3"))
	require.NoError(t, os.Rename(tmp, target))
	poll.Eventually(t, func() bool { return image(h, "linked-node-1") == "l:3" }, deadline, 2*time.Millisecond, "target replaced by rename")

	// Symlink swap (as ConfigMap volumes do: the link is replaced atomically).
	target2 := filepath.Join(ext, "real2.yaml")
	write(t, target2, manifest("linked", "l:4"))
	tmpLink := filepath.Join(dir, ".linked.tmp")
	require.NoError(t, os.Symlink(target2, tmpLink))
	require.NoError(t, os.Rename(tmpLink, link))
	poll.Eventually(t, func() bool { return image(h, "linked-node-1") == "l:4" }, deadline, 2*time.Millisecond, "link swapped")

	require.NoError(t, os.Remove(link))
	poll.Eventually(t, func() bool { return h.st.byName()["linked-node-1"] == nil }, deadline, 2*time.Millisecond, "symlink removed")

	// A dangling symlink is no pod.
	require.NoError(t, os.Symlink(filepath.Join(ext, "missing.yaml"), link))
	write(t, filepath.Join(dir, "marker.yaml"), manifest("marker", "m"))
	poll.Eventually(t, func() bool { return image(h, "marker-node-1") == "m" }, deadline, 2*time.Millisecond, "marker")
	assert.Nil(t, h.st.byName()["linked-node-1"])
}

func TestFileSingleFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pod.yaml")
	write(t, path, manifest("one", "a:1"))
	write(t, filepath.Join(dir, "sibling.yaml"), manifest("sibling", "s"))
	h := startFile(t, path)
	poll.Eventually(t, func() bool { return image(h, "one-node-1") == "a:1" }, deadline, 2*time.Millisecond, "read")
	tmp := filepath.Join(dir, "pod.yaml.tmp")
	write(t, tmp, manifest("one", "a:2"))
	require.NoError(t, os.Rename(tmp, path))
	poll.Eventually(t, func() bool { return image(h, "one-node-1") == "a:2" }, deadline, 2*time.Millisecond, "renamed over")
	assert.Len(t, h.st.byName(), 1, "siblings of the file are not read")
	require.NoError(t, os.Remove(path))
	poll.Eventually(t, func() bool { return len(h.st.byName()) == 0 }, deadline, 2*time.Millisecond, "removed")
}

func TestFileMissingDirectoryThenPeriodicReread(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "manifests")
	h := startFile(t, dir) // ready with an empty set, as the kubelet
	assert.Empty(t, h.st.byName())
	require.NoError(t, os.Mkdir(dir, 0o755))
	write(t, filepath.Join(dir, "a.yaml"), manifest("a", "a:1"))
	// Not watched yet: the periodic re-read finds it and starts watching.
	poll.Eventually(t, func() bool { h.clock.Step(DefaultFileCheckFrequency); return image(h, "a-node-1") == "a:1" }, deadline, 2*time.Millisecond, "re-read on tick")
	write(t, filepath.Join(dir, "b.yaml"), manifest("b", "b:1"))
	poll.Eventually(t, func() bool { return image(h, "b-node-1") == "b:1" }, deadline, 2*time.Millisecond, "now watched")
}

func TestFile500AtOnce(t *testing.T) {
	dir := t.TempDir()
	h := startFile(t, dir)
	staging := t.TempDir()
	for i := range 500 {
		write(t, filepath.Join(staging, fmt.Sprintf("p%03d.yaml", i)), manifest(fmt.Sprintf("p%03d", i), "i:1"))
	}
	for i := range 500 {
		n := fmt.Sprintf("p%03d.yaml", i)
		require.NoError(t, os.Rename(filepath.Join(staging, n), filepath.Join(dir, n)))
	}
	poll.Eventually(t, func() bool { return len(h.st.byName()) == 500 }, deadline, 2*time.Millisecond, "500 pods")
	for i := range 500 {
		require.NoError(t, os.Remove(filepath.Join(dir, fmt.Sprintf("p%03d.yaml", i))))
	}
	poll.Eventually(t, func() bool { return len(h.st.byName()) == 0 }, deadline, 2*time.Millisecond, "500 removed")
}

// TestFileRereadNoChange: a full re-read of unchanged files sends nothing.
func TestFileRereadNoChange(t *testing.T) {
	dir := t.TempDir()
	for i := range 20 {
		write(t, filepath.Join(dir, fmt.Sprintf("p%d.yaml", i)), manifest(fmt.Sprintf("p%d", i), "i:1"))
	}
	m := NewMux(MuxConfig{Buffer: 1000})
	s := newTestFileSource(t, dir, m)
	assert.True(t, s.resync())
	require.NoError(t, s.send(context.Background(), true))
	assert.Len(t, drain(m), 1)
	assert.False(t, s.resync())
	write(t, filepath.Join(dir, "p0.yaml"), manifest("p0", "i:1")) // same bytes
	assert.False(t, s.resync())
	write(t, filepath.Join(dir, "p0.yaml"), manifest("p0", "i:1")+"# a comment\n") // same pod
	assert.True(t, s.resync(), "re-decoded")
	require.NoError(t, s.send(context.Background(), false))
	assert.Empty(t, drain(m), "same pod: the mux emits nothing")
}

// newTestFileSource is a FileSource driven by hand (no Run).
func newTestFileSource(tb testing.TB, dir string, m *Mux) *FileSource {
	return newTestFileSourceWith(tb, FileConfig{Path: dir, NodeName: node}, m)
}

func newTestFileSourceWith(tb testing.TB, cfg FileConfig, m *Mux) *FileSource {
	s, err := NewFileSource(cfg, m)
	require.NoError(tb, err)
	m.Register(s.Name())
	w, err := fsnotify.NewWatcher()
	require.NoError(tb, err)
	tb.Cleanup(func() { w.Close() })
	s.watcher = w
	s.watch()
	return s
}

// logLines is a logr sink that keeps every line, for tests that count them.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		l.lines = append(l.lines, args)
		l.mu.Unlock()
	}, funcr.Options{Verbosity: 1})
}

// with counts the lines containing every one of subs.
func (l *logLines) with(subs ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
next:
	for _, line := range l.lines {
		for _, s := range subs {
			if !strings.Contains(line, s) {
				continue next
			}
		}
		n++
	}
	return n
}

// TestFileUnusablePathsLoggedOnce: an empty file, a dangling symlink, a
// directory named like a manifest, a symlink loop and an oversized file are
// each logged once, with the file's path, however often the directory is
// re-read; a loop keeps its pod, and each is logged again only when its
// condition changes.
func TestFileUnusablePathsLoggedOnce(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "empty.yaml"), "")
	require.NoError(t, os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "dangling.yaml")))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "x.yaml"), 0o755))
	loopA, loopB := filepath.Join(dir, "loop-a.yaml"), filepath.Join(dir, "loop-b.yaml")
	write(t, loopA, manifest("loop", "l:1"))
	big := filepath.Join(dir, "big.yaml")
	write(t, big, manifest("big", "b:1")+"#"+strings.Repeat("x", 2048)+"\n")

	var logs logLines
	m := NewMux(MuxConfig{Buffer: 1000})
	s := newTestFileSourceWith(t, FileConfig{Path: dir, NodeName: node, MaxFileBytes: 1024, Log: logs.logger()}, m)
	s.resync()
	require.NoError(t, s.send(context.Background(), true))
	require.Equal(t, []string{"loop-node-1"}, names(m.Pods()))

	// loop-a.yaml becomes a symlink loop: its pod is kept.
	require.NoError(t, os.Remove(loopA))
	require.NoError(t, os.Symlink(loopB, loopA))
	require.NoError(t, os.Symlink(loopA, loopB))
	for range 5 {
		s.resync()
		require.NoError(t, s.send(context.Background(), false))
	}
	assert.Equal(t, []string{"loop-node-1"}, names(m.Pods()), "a loop keeps the last good pod")
	for _, tc := range []struct {
		file string
		want string
	}{
		{"empty.yaml", "Manifest is empty; skipped"},
		{"dangling.yaml", "Manifest is a symlink to nothing; skipped"},
		{"x.yaml", "Manifest path is not a regular file; skipped"},
		{"loop-a.yaml", "Cannot stat manifest"},
		{"loop-b.yaml", "Cannot stat manifest"},
		{"big.yaml", "over the limit of 1024"},
	} {
		assert.Equal(t, 1, logs.with(filepath.Join(dir, tc.file)+`"`, tc.want), "%s: logged once with %q; log:\n%s", tc.file, tc.want, strings.Join(logs.lines, "\n"))
	}
	assert.Len(t, s.Errors(), 1, "the oversized file is an invalid manifest")

	// A condition that changes is logged again: the loop is fixed.
	require.NoError(t, os.Remove(loopA))
	write(t, loopA, manifest("loop", "l:2"))
	s.resync()
	assert.Equal(t, 1, logs.with(loopA+`"`, "Manifest usable again"))
}

// TestFileConflictsNameBothFiles: two files with one pod name, or one UID,
// are logged with both paths; the file whose pod was there first keeps it,
// the other is held back (Errors, podsource_conflicts_total) until the
// first goes.
func TestFileConflictsNameBothFiles(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "b-first.yaml"), filepath.Join(dir, "a-second.yaml")
	write(t, a, manifest("web", "i:1"))
	var logs logLines
	metrics := NewMetrics()
	m := NewMux(MuxConfig{Buffer: 1000})
	s := newTestFileSourceWith(t, FileConfig{Path: dir, NodeName: node, Log: logs.logger(), Metrics: metrics}, m)
	s.resync()
	require.NoError(t, s.send(context.Background(), true))

	// A later file with the same name sorts first, but the running pod keeps it.
	write(t, b, manifest("web", "i:2"))
	for range 3 {
		s.resync()
		require.NoError(t, s.send(context.Background(), true))
	}
	pods := m.Pods()
	require.Len(t, pods, 1)
	assert.Equal(t, "i:1", pods[0].Spec.Containers[0].Image, "the incumbent keeps the name")
	assert.Equal(t, 1, logs.with("Manifest conflicts with another file", b, a, `metadata.name: Duplicate value: \"default/web-node-1\"`), strings.Join(logs.lines, "\n"))
	require.Len(t, s.Errors(), 1)
	assert.Contains(t, s.Errors()[0].Error(), b)
	assert.Contains(t, s.Errors()[0].Error(), "the pod of "+a+" has this namespace/name")
	assert.Equal(t, 1.0, testutil.ToFloat64(metrics.conflicts.WithLabelValues("file")))
	assert.Empty(t, m.Conflicts(), "the mux never sees the held-back pod")

	require.NoError(t, os.Remove(a))
	require.NoError(t, s.send(context.Background(), s.resync()))
	pods = m.Pods()
	require.Len(t, pods, 1)
	assert.Equal(t, "i:2", pods[0].Spec.Containers[0].Image, "the held-back pod passes once the other is gone")
	assert.Empty(t, s.Errors())

	// Two files, two names, one explicit UID.
	uidPod := func(name string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + ", uid: same-uid}\nspec: {containers: [{name: c, image: i}]}\n"
	}
	c, d := filepath.Join(dir, "c.yaml"), filepath.Join(dir, "d.yaml")
	write(t, c, uidPod("one"))
	write(t, d, uidPod("two"))
	require.NoError(t, s.send(context.Background(), s.resync()))
	assert.Equal(t, []string{"one-node-1", "web-node-1"}, names(m.Pods()))
	assert.Equal(t, 1, logs.with("Manifest conflicts with another file", d, c, `metadata.uid: Duplicate value: \"same-uid\"`), strings.Join(logs.lines, "\n"))
}
