package containerlog_test

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/containerlog"
	"github.com/nodekit-dev/nodekit/internal/poll"
)

// start is the tests' clock: rotations then are 0.log.20260301-120000.
var start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newManager(t testing.TB, rt containerlog.Runtime, cfg containerlog.Config) (*containerlog.Manager, *testingclock.FakeClock) {
	t.Helper()
	clk := testingclock.NewFakeClock(start)
	cfg.Runtime, cfg.Clock = rt, clk
	m, err := containerlog.NewManager(cfg)
	require.NoError(t, err)
	return m, clk
}

// contents maps each file in dir to its content, a .gz one's decompressed.
func contents(t testing.TB, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string]string{}
	for _, e := range entries {
		out[e.Name()] = readLog(t, filepath.Join(dir, e.Name()))
	}
	return out
}

func readLog(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		require.NoError(t, err, path)
		r = zr
	}
	b, err := io.ReadAll(r)
	require.NoError(t, err, path)
	return string(b)
}

// TestRotate is one container's rotation, case by case: each existing
// file holds its own name, the live log size bytes of "x".
func TestRotate(t *testing.T) {
	const ts = "20260301-120000"
	x := func(n int) string { return strings.Repeat("x", n) }
	for _, tc := range []struct {
		name     string
		maxFiles int
		existing []string // rotated files beside 0.log
		size     int
		state    runtimeapi.ContainerState
		noLog    bool // the live log is missing
		reopen   error
		want     map[string]string
		wantErr  string
		reopens  int
	}{
		{name: "below MaxSize", size: 1023, want: map[string]string{"0.log": x(1023)}},
		{name: "at MaxSize", size: 1024, reopens: 1,
			want: map[string]string{"0.log": "", "0.log." + ts: x(1024)}},
		{name: "not running", size: 4096, state: runtimeapi.ContainerState_CONTAINER_EXITED,
			want: map[string]string{"0.log": x(4096)}},
		{name: "older rotated file compressed", size: 2048, reopens: 1,
			existing: []string{"0.log.20260301-110000"},
			want: map[string]string{"0.log": "", "0.log." + ts: x(2048),
				"0.log.20260301-110000.gz": "0.log.20260301-110000"}},
		{name: "MaxFiles 3 keeps 3", maxFiles: 3, size: 2048, reopens: 1,
			existing: []string{"0.log.20260301-090000.gz", "0.log.20260301-100000.gz", "0.log.20260301-110000"},
			want: map[string]string{"0.log": "", "0.log." + ts: x(2048),
				"0.log.20260301-110000.gz": "0.log.20260301-110000"}},
		{name: "MaxFiles 2 keeps only the rotated", maxFiles: 2, size: 2048, reopens: 1,
			existing: []string{"0.log.20260301-100000.gz", "0.log.20260301-110000"},
			want:     map[string]string{"0.log": "", "0.log." + ts: x(2048)}},
		{name: "leftovers cleaned", size: 2048, reopens: 1,
			existing: []string{"0.log.20260301-100000", "0.log.20260301-100000.gz", "0.log.20260301-110000.tmp", "0.log.20260301-110000.gz.tmp"},
			want: map[string]string{"0.log": "", "0.log." + ts: x(2048),
				"0.log.20260301-100000.gz": "0.log.20260301-100000.gz"}},
		{name: "reopen fails: renamed back", size: 2048, reopen: errors.New("disk on fire"),
			want:    map[string]string{"0.log": x(2048)},
			wantErr: `failed to reopen container log "c1": disk on fire`},
		{name: "missing log reopened", noLog: true, reopens: 1, want: map[string]string{"0.log": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			rt := newFakeRuntime()
			rt.add(t, "c1", filepath.Join(dir, "0.log"))
			rt.write(t, "c1", []byte(x(tc.size)))
			for _, name := range tc.existing {
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(name), 0o640))
			}
			if tc.name == "leftovers cleaned" { // a .gz holds gzip
				writeGzip(t, filepath.Join(dir, "0.log.20260301-100000.gz"), "0.log.20260301-100000.gz")
			}
			if tc.state != 0 {
				rt.setState("c1", tc.state)
			}
			if tc.noLog {
				require.NoError(t, os.Remove(filepath.Join(dir, "0.log")))
			}
			rt.reopenErr = tc.reopen
			m, _ := newManager(t, rt, containerlog.Config{MaxSize: resource.MustParse("1Ki"), MaxFiles: tc.maxFiles})

			err := m.Rotate(context.Background(), "c1")
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
			} else {
				assert.NoError(t, err)
			}
			assert.Equal(t, tc.want, contents(t, dir))
			assert.Equal(t, tc.reopens, rt.reopenCount("c1"))
		})
	}
}

func writeGzip(t testing.TB, path, content string) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	w := gzip.NewWriter(f)
	_, err = w.Write([]byte(content))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, f.Close())
}

func TestRotateErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		id      string
		setup   func(rt *fakeRuntime)
		wantErr string
	}{
		{"unknown container", "nope", nil, `failed to get container status "nope": container "nope": not found`},
		{"status error", "c1", func(rt *fakeRuntime) { rt.statusErr["c1"] = errors.New("runtime down") },
			`failed to get container status "c1": runtime down`},
		{"missing log, reopen fails", "c1", func(rt *fakeRuntime) { rt.reopenErr = errors.New("no") },
			`container log "` + "DIR" + `/0.log" doesn't exist, reopen container log failed: no`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			rt := newFakeRuntime()
			rt.add(t, "c1", filepath.Join(dir, "0.log"))
			require.NoError(t, os.Remove(filepath.Join(dir, "0.log")))
			if tc.setup != nil {
				tc.setup(rt)
			}
			m, _ := newManager(t, rt, containerlog.Config{})
			err := m.Rotate(context.Background(), tc.id)
			assert.EqualError(t, err, strings.ReplaceAll(tc.wantErr, "DIR", dir))
		})
	}
}

// TestRotateSameSecond: a second rotation within one second would
// overwrite the first rotated file; it fails and leaves the live log for
// the next pass.
func TestRotateSameSecond(t *testing.T) {
	dir := t.TempDir()
	rt := newFakeRuntime()
	rt.add(t, "c1", filepath.Join(dir, "0.log"))
	m, clk := newManager(t, rt, containerlog.Config{MaxSize: resource.MustParse("10")})
	ctx := context.Background()

	rt.write(t, "c1", []byte("first-----"))
	require.NoError(t, m.Rotate(ctx, "c1"))
	rt.write(t, "c1", []byte("second----"))
	assert.ErrorIs(t, m.Rotate(ctx, "c1"), os.ErrExist)
	assert.Equal(t, map[string]string{"0.log": "second----", "0.log.20260301-120000.gz": "first-----"}, contents(t, dir),
		"the first rotated file compressed, not overwritten")

	clk.Step(time.Second)
	require.NoError(t, m.Rotate(ctx, "c1"))
	assert.Equal(t, map[string]string{"0.log": "", "0.log.20260301-120000.gz": "first-----", "0.log.20260301-120001": "second----"},
		contents(t, dir))
}

// TestCompressedLogsReadBack: across rotations, AllLogs lists the files
// oldest first and, decompressed, they hold what was written, in order,
// but for what MaxFiles dropped.
func TestCompressedLogsReadBack(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	rt := newFakeRuntime()
	rt.add(t, "c1", path)
	m, clk := newManager(t, rt, containerlog.Config{MaxSize: resource.MustParse("1Ki"), MaxFiles: 4})
	chunks := make([]string, 6)
	for i := range chunks {
		chunks[i] = strings.Repeat(string(rune('a'+i)), 1024+i) + "\n"
		rt.write(t, "c1", []byte(chunks[i]))
		require.NoError(t, m.Rotate(context.Background(), "c1"))
		clk.Step(time.Minute)
	}
	rt.write(t, "c1", []byte("live\n"))

	logs, err := containerlog.AllLogs(path)
	require.NoError(t, err)
	require.Equal(t, []string{path + ".20260301-120300.gz", path + ".20260301-120400.gz", path + ".20260301-120500", path}, logs)
	var got strings.Builder
	for _, l := range logs {
		got.WriteString(readLog(t, l))
	}
	assert.Equal(t, chunks[3]+chunks[4]+chunks[5]+"live\n", got.String())
}

// TestRunRotatesOnTicks: Run looks at once, then every MonitorInterval of
// its clock, and returns nil when its context ends.
func TestRunRotatesOnTicks(t *testing.T) {
	dir := t.TempDir()
	rt := newFakeRuntime()
	rt.add(t, "c1", filepath.Join(dir, "0.log"))
	rt.write(t, "c1", make([]byte, 2048))
	m, clk := newManager(t, rt, containerlog.Config{MaxSize: resource.MustParse("1Ki")})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()

	poll.Eventually(t, func() bool { return rt.reopenCount("c1") == 1 }, 10*time.Second, time.Millisecond, "first pass at once")
	poll.Eventually(t, clk.HasWaiters, 10*time.Second, time.Millisecond, "Run waits on its ticker")
	// The first pass looked at its only container before rotating it:
	// what is written now waits for the next pass.
	rt.write(t, "c1", make([]byte, 2048))
	clk.Step(10 * time.Second)
	poll.Eventually(t, func() bool { return rt.reopenCount("c1") == 2 }, 10*time.Second, time.Millisecond, "a pass after the tick")
	assert.Equal(t, []string{"0.log", "0.log.20260301-120000.gz", "0.log.20260301-120010"}, names(t, dir))

	cancel()
	assert.NoError(t, <-done)
}

// gate is a ReopenContainerLog hook that holds every reopen until
// released and counts how many overlap, in all and per container.
type gate struct {
	mu              sync.Mutex
	inflight        map[string]int
	most, mostPerID int
	release         chan struct{}
}

func newGate() *gate { return &gate{inflight: map[string]int{}, release: make(chan struct{})} }

func (g *gate) hook(id string) {
	g.mu.Lock()
	g.inflight[id]++
	n := 0
	for _, v := range g.inflight {
		n += v
	}
	g.most, g.mostPerID = max(g.most, n), max(g.mostPerID, g.inflight[id])
	g.mu.Unlock()
	<-g.release
	g.mu.Lock()
	g.inflight[id]--
	g.mu.Unlock()
}

func (g *gate) overlapping() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.most
}

// TestRotateAllWorkers: at most MaxWorkers containers are rotated at once,
// and every one of them in the end.
func TestRotateAllWorkers(t *testing.T) {
	dir := t.TempDir()
	rt := newFakeRuntime()
	ids := []string{"c0", "c1", "c2", "c3", "c4"}
	for i, id := range ids {
		rt.add(t, id, filepath.Join(dir, strconv.Itoa(i)+".log"))
		rt.write(t, id, make([]byte, 2048))
	}
	g := newGate()
	rt.reopenHook = g.hook
	m, _ := newManager(t, rt, containerlog.Config{MaxSize: resource.MustParse("1Ki"), MaxWorkers: 2})

	type result struct {
		rotated []string
		err     error
	}
	pass := make(chan result)
	go func() { r, err := m.RotateAll(context.Background()); pass <- result{r, err} }()
	poll.Eventually(t, func() bool { return g.overlapping() == 2 }, 10*time.Second, time.Millisecond, "two workers busy")
	close(g.release)
	r := <-pass
	require.NoError(t, r.err)
	sort.Strings(r.rotated)
	assert.Equal(t, ids, r.rotated)
	assert.Equal(t, 2, g.overlapping(), "at most MaxWorkers at once")
}

// TestRotateOneAtATime: callers rotating one container take turns; the
// first rotates, the others then find the log below MaxSize.
func TestRotateOneAtATime(t *testing.T) {
	dir := t.TempDir()
	rt := newFakeRuntime()
	rt.add(t, "c1", filepath.Join(dir, "0.log"))
	rt.write(t, "c1", make([]byte, 2048))
	g := newGate()
	rt.reopenHook = g.hook
	m, _ := newManager(t, rt, containerlog.Config{MaxSize: resource.MustParse("1Ki"), MaxWorkers: 4})

	errs := make(chan error)
	for range 3 {
		go func() { errs <- m.Rotate(context.Background(), "c1") }()
	}
	go func() { _, err := m.RotateAll(context.Background()); errs <- err }()
	poll.Eventually(t, func() bool { return g.overlapping() == 1 }, 10*time.Second, time.Millisecond, "one rotation under way")
	close(g.release)
	for range 4 {
		require.NoError(t, <-errs)
	}
	assert.Equal(t, 1, g.mostPerID)
	assert.Equal(t, 1, rt.reopenCount("c1"))
}

// TestStatusOnlyWhenNeeded: a pass reads a container's status when it
// first sees it running, and after only for a log that reached MaxSize or
// went missing; a container that stopped is forgotten, and its status read
// again if it is listed running again.
func TestStatusOnlyWhenNeeded(t *testing.T) {
	dir := t.TempDir()
	rt := newFakeRuntime()
	for _, id := range []string{"c0", "c1", "c2"} {
		rt.add(t, id, filepath.Join(dir, id+".log"))
		rt.write(t, id, make([]byte, 100))
	}
	m, _ := newManager(t, rt, containerlog.Config{MaxSize: resource.MustParse("1Ki")})
	steps := []struct {
		name     string
		do       func()
		statuses int // ContainerStatus calls during the pass
		rotated  []string
	}{
		{"first pass", func() {}, 3, nil},
		{"nothing changed", func() {}, 0, nil},
		{"a log at MaxSize", func() { rt.write(t, "c1", make([]byte, 1024)) }, 1, []string{"c1"}},
		{"a log gone", func() { require.NoError(t, os.Remove(filepath.Join(dir, "c2.log"))) }, 1, nil},
		{"a container stopped", func() { rt.setState("c0", runtimeapi.ContainerState_CONTAINER_EXITED) }, 0, nil},
		{"running again", func() { rt.setState("c0", runtimeapi.ContainerState_CONTAINER_RUNNING) }, 1, nil},
	}
	for _, s := range steps {
		s.do()
		before := rt.statusCalls()
		rotated, err := m.RotateAll(context.Background())
		require.NoError(t, err, s.name)
		assert.Equal(t, s.rotated, rotated, s.name)
		assert.Equal(t, s.statuses, rt.statusCalls()-before, s.name)
	}
	assert.Equal(t, 1, rt.reopenCount("c2"), "the missing log reopened")
	assert.FileExists(t, filepath.Join(dir, "c2.log"))
}

// TestRunChecksHotLogsBetweenPasses: a log rotated at a pass is looked at
// every HotCheckInterval until the next, so a fast writer rotates near
// MaxSize; a log that was under MaxSize waits for the next pass.
func TestRunChecksHotLogsBetweenPasses(t *testing.T) {
	dir := t.TempDir()
	rt := newFakeRuntime()
	rt.add(t, "hot", filepath.Join(dir, "hot.log"))
	rt.add(t, "calm", filepath.Join(dir, "calm.log"))
	rt.write(t, "hot", make([]byte, 2048))
	m, clk := newManager(t, rt, containerlog.Config{MaxSize: resource.MustParse("1Ki")})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	poll.Eventually(t, func() bool { return rt.reopenCount("hot") == 1 }, 10*time.Second, time.Millisecond, "first pass")
	poll.Eventually(t, clk.HasWaiters, 10*time.Second, time.Millisecond, "Run waits on its tickers")

	rt.write(t, "hot", make([]byte, 2048))
	rt.write(t, "calm", make([]byte, 2048))
	clk.Step(time.Second) // a rotation a second after the first: its file's name differs
	poll.Eventually(t, func() bool { return rt.reopenCount("hot") == 2 }, 10*time.Second, time.Millisecond, "the hot log rotated between passes")
	poll.Eventually(t, clk.HasWaiters, 10*time.Second, time.Millisecond, "Run waits again")
	assert.Zero(t, rt.reopenCount("calm"), "a log under MaxSize at the pass waits for the next")

	clk.Step(10 * time.Second)
	poll.Eventually(t, func() bool { return rt.reopenCount("calm") == 1 }, 10*time.Second, time.Millisecond, "the next pass")
	cancel()
	assert.NoError(t, <-done)
}
