package gc_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit-dev/nodekit/gc"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

// TestImageGCFakeRuntime runs the image GC through runtime.Client over
// gRPC against the fake runtime, with a disk said to be 90% full: the
// unused image goes; the sandbox image and the one a container uses stay.
func TestImageGCFakeRuntime(t *testing.T) {
	e := newCRIEnv(t)
	p := e.pod("uid-p", "p", nil)
	e.container(p, "app", 0, "sleep") // uses testbin
	var mount string
	full := gc.FsStatsFunc(func(path string) (uint64, uint64, error) {
		mount = path
		return 1000, 100, nil
	})
	ev := &events{}
	g, err := gc.NewImageGC(gc.ImageConfig{Images: e.client, Containers: e.client, SandboxImage: fake.PauseImage,
		FsStats: full, Recorder: ev, NodeName: "node-1", Clock: e.clk})
	require.NoError(t, err)

	_, err = g.GarbageCollect(e.ctx)
	var fse *gc.FreeSpaceError
	require.ErrorAs(t, err, &fse, "every image is younger than MinAge at first sight")
	assert.Equal(t, int64(100), fse.Wanted)
	assert.NotEmpty(t, mount, "the fake's image filesystem mountpoint")

	e.clk.Step(gc.DefaultImageMinimumGCAge)
	res, err := g.GarbageCollect(e.ctx)
	require.NoError(t, err)
	require.Len(t, res.Removed, 1)
	assert.Equal(t, []string{fake.RemovableImage}, res.Removed[0].RepoTags)
	assert.GreaterOrEqual(t, res.Freed, int64(100))
	for ref, want := range map[string]bool{fake.RemovableImage: false, fake.PauseImage: true, fake.TestbinImage: true} {
		st, err := e.client.ImageStatus(e.ctx, &runtimeapi.ImageSpec{Image: ref}, false)
		require.NoError(t, err)
		assert.Equal(t, want, st.Image != nil, ref)
	}
	assert.Equal(t, []string{"FreeDiskSpaceFailed: Failed to garbage collect required amount of images. " +
		"Attempted to free 100 bytes, but only found 0 bytes eligible to free."}, ev.list())

	// With its container gone, testbin is unused and goes at the next
	// pass; the sandbox image never does.
	cs, err := e.client.ListContainers(e.ctx, nil)
	require.NoError(t, err)
	for _, c := range cs {
		require.NoError(t, e.client.StopContainer(e.ctx, c.Id, 0))
		require.NoError(t, e.client.RemoveContainer(e.ctx, c.Id))
	}
	e.clk.Step(time.Minute)
	res, err = g.GarbageCollect(e.ctx)
	require.NoError(t, err)
	require.Len(t, res.Removed, 1)
	assert.Equal(t, []string{fake.TestbinImage}, res.Removed[0].RepoTags)
	imgs, err := e.client.ListImages(e.ctx, nil)
	require.NoError(t, err)
	require.Len(t, imgs, 1)
	assert.Equal(t, []string{fake.PauseImage}, imgs[0].RepoTags)
}

// TestImageGCFakeRuntimeStatfs runs the image GC as the agent does (Run,
// statfs of the mountpoint ImageFsInfo reports) against the fake runtime
// for two periods (#28): every pass succeeds, logs nothing, and its usage
// is that of the filesystem the fake reports.
func TestImageGCFakeRuntimeStatfs(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name      string
		opts      []fake.Option
		wantMount string
	}{
		{"default: the OS temp dir", nil, os.TempDir()},
		{"WithImageFsMountpoint", []fake.Option{fake.WithImageFsMountpoint(dir)}, dir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newCRIEnv(t, tt.opts...)
			fs := &statfsRecorder{}
			var logged []string
			log := funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{})
			// The host's disk must not decide whether images go: remove
			// none for space, only measure.
			policy := gc.ImagePolicy{HighThresholdPercent: 100, LowThresholdPercent: 100,
				MinAge: gc.DefaultImageMinimumGCAge, MaxAge: 24 * time.Hour}
			type pass struct {
				res gc.ImageResult
				err error
			}
			passes := make(chan pass, 1)
			g, err := gc.NewImageGC(gc.ImageConfig{Images: e.client, Containers: e.client, Policy: &policy,
				SandboxImage: fake.PauseImage, FsStats: fs, Clock: e.clk, Log: log,
				OnCollect: func(res gc.ImageResult, err error) { passes <- pass{res, err} }})
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(e.ctx)
			done := make(chan error, 1)
			go func() { done <- g.Run(ctx) }()
			stop := sync.OnceValue(func() error { cancel(); return <-done })
			defer stop() // on a failed require too: Run must not outlive the test

			for i := range 2 {
				p := <-passes
				require.NoError(t, p.err, "pass %d", i)
				info, err := e.client.ImageFsInfo(e.ctx)
				require.NoError(t, err)
				mount := info.ImageFilesystems[0].GetFsId().GetMountpoint()
				assert.Equal(t, tt.wantMount, mount)
				assert.DirExists(t, mount)
				capacity, available, path := fs.last()
				assert.Equal(t, mount, path, "statfs of the fake's mountpoint")
				usage, _ := gc.BytesToFree(policy, int64(capacity), int64(available))
				assert.Equal(t, usage, p.res.UsagePercent)
				e.clk.Step(gc.DefaultImageGCPeriod) // Run's ticker exists once a pass is reported
			}
			require.NoError(t, stop())
			assert.Empty(t, logged, "nothing logged at level 0, no error")
		})
	}
}

// statfsRecorder is gc.Statfs remembering its last question and answer,
// so that a test checks the GC's figures against the same statfs.
type statfsRecorder struct {
	mu                  sync.Mutex
	path                string
	capacity, available uint64
}

func (s *statfsRecorder) FsStats(path string) (uint64, uint64, error) {
	c, a, err := gc.Statfs.FsStats(path)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.path, s.capacity, s.available = path, c, a
	return c, a, err
}

func (s *statfsRecorder) last() (capacity, available uint64, path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.capacity, s.available, s.path
}
