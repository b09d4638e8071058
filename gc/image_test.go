package gc_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/gc"
)

// images is an in-memory ImageService and ContainerLister.
type images struct {
	mu         sync.Mutex
	list       []*runtimeapi.Image
	containers []*runtimeapi.Container
	removeErr  map[string]error
	removed    []string
	listErr    error
}

func (s *images) ListImages(context.Context, *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.list), s.listErr
}

func (s *images) ImageStatus(_ context.Context, spec *runtimeapi.ImageSpec, _ bool) (*runtimeapi.ImageStatusResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, im := range s.list {
		if im.Id == spec.Image || slices.Contains(im.RepoTags, spec.Image) {
			return &runtimeapi.ImageStatusResponse{Image: im}, nil
		}
	}
	return &runtimeapi.ImageStatusResponse{}, nil
}

func (s *images) RemoveImage(_ context.Context, spec *runtimeapi.ImageSpec) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.removeErr[spec.Image]; err != nil {
		return err
	}
	s.list = slices.DeleteFunc(s.list, func(im *runtimeapi.Image) bool { return im.Id == spec.Image })
	s.removed = append(s.removed, spec.Image)
	return nil
}

func (s *images) ImageFsInfo(context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{{
		FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: "/images"},
	}}}, nil
}

func (s *images) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.containers), nil
}

func (s *images) use(id, ref, image string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.containers = append(s.containers, &runtimeapi.Container{Id: id, ImageRef: ref, Image: &runtimeapi.ImageSpec{Image: image},
		State: runtimeapi.ContainerState_CONTAINER_EXITED})
}

func (s *images) removedIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.removed)
}

func image(id string, size uint64, tags ...string) *runtimeapi.Image {
	return &runtimeapi.Image{Id: id, Size: size, RepoTags: tags}
}

// disk is an FsStats with a fixed capacity whose use is what its images
// weigh plus a base.
type disk struct {
	capacity, base uint64
	imgs           *images
	mount          string
}

func (d *disk) FsStats(path string) (uint64, uint64, error) {
	d.mount = path
	used := d.base
	d.imgs.mu.Lock()
	for _, im := range d.imgs.list {
		used += im.Size
	}
	d.imgs.mu.Unlock()
	return d.capacity, d.capacity - min(used, d.capacity), nil
}

// events records Eventf calls as "reason: message".
type events struct {
	mu  sync.Mutex
	got []string
}

func (e *events) Eventf(_ apiruntime.Object, _, reason, format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, reason+": "+fmt.Sprintf(format, args...))
}

func (e *events) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.got)
}

type imageTest struct {
	imgs   *images
	disk   *disk
	events *events
	clk    *testingclock.FakeClock
	gc     *gc.ImageGC
}

func newImageTest(t *testing.T, p gc.ImagePolicy, capacity, base uint64, list ...*runtimeapi.Image) *imageTest {
	t.Helper()
	it := &imageTest{imgs: &images{list: list, removeErr: map[string]error{}}, events: &events{},
		clk: testingclock.NewFakeClock(epoch)}
	it.disk = &disk{capacity: capacity, base: base, imgs: it.imgs}
	var err error
	it.gc, err = gc.NewImageGC(gc.ImageConfig{Images: it.imgs, Containers: it.imgs, Policy: &p, FsStats: it.disk,
		SandboxImage: "registry.k8s.io/pause:3.10", Recorder: it.events, NodeName: "node-1", Clock: it.clk})
	require.NoError(t, err)
	return it
}

// TestImageGC checks an image GC pass against the kubelet's rules; the
// disk is 1000 bytes, so that with the default thresholds 850 used starts
// a collection down to 800.
func TestImageGC(t *testing.T) {
	ctx := context.Background()
	p := gc.DefaultImagePolicy()

	t.Run("below the high threshold nothing is removed", func(t *testing.T) {
		it := newImageTest(t, p, 1000, 800, image("sha256:a", 40))
		it.clk.Step(time.Hour)
		res, err := it.gc.GarbageCollect(ctx)
		require.NoError(t, err)
		assert.Equal(t, 84, res.UsagePercent)
		assert.Empty(t, it.imgs.removedIDs())
		assert.Equal(t, "/images", it.disk.mount, "FsStats asked about ImageFsInfo's mountpoint")
	})

	t.Run("over the high threshold, least recently used first, down to the low threshold", func(t *testing.T) {
		it := newImageTest(t, p, 1000, 700,
			image("sha256:new", 50, "app:2"), image("sha256:old", 50, "app:1"), image("sha256:never", 50, "tool:1"),
			image("sha256:third", 50, "app:0"))
		it.imgs.use("c1", "sha256:old", "app:1")
		_, err := it.gc.GarbageCollect(ctx) // detects; 900 used, but all younger than MinAge
		var fse *gc.FreeSpaceError
		require.ErrorAs(t, err, &fse, "nothing old enough to free yet")
		it.imgs.mu.Lock()
		it.imgs.containers = nil // c1 removed: "old" last used at epoch
		it.imgs.mu.Unlock()
		it.clk.Step(time.Minute)
		it.imgs.use("c2", "sha256:new", "app:2")
		_, err = it.gc.GarbageCollect(ctx) // "new" last used at epoch+1m
		require.ErrorAs(t, err, &fse)
		it.imgs.mu.Lock()
		it.imgs.containers = nil
		it.imgs.mu.Unlock()
		it.clk.Step(5 * time.Minute)
		res, err := it.gc.GarbageCollect(ctx)
		require.NoError(t, err)
		assert.Equal(t, 90, res.UsagePercent)
		assert.Equal(t, int64(100), res.BytesToFree, "1000*(100-80)/100 - 100 available")
		assert.Equal(t, int64(100), res.Freed)
		assert.Equal(t, []string{"sha256:never", "sha256:third"}, it.imgs.removedIDs(),
			"never used first (by first detection, then ID), and enough freed before the used ones")
		assert.Equal(t, gc.ImageReasonSpace, res.Removed[0].Reason)
		assert.Equal(t, []string{"tool:1"}, res.Removed[0].RepoTags)
	})

	t.Run("in-use, pinned and sandbox images are kept; freeing too little is FreeDiskSpaceFailed", func(t *testing.T) {
		pinned := image("sha256:pinned", 100, "pinned:1")
		pinned.Pinned = true
		it := newImageTest(t, p, 1000, 500,
			image("sha256:pause", 100, "registry.k8s.io/pause:3.10"), pinned,
			image("sha256:by-id", 100, "a:1"), image("sha256:by-tag", 100, "b:1"), image("sha256:by-digest", 50, "c:1"),
			image("sha256:free", 30, "d:1"))
		it.imgs.list[4].RepoDigests = []string{"c@sha256:digest"}
		it.imgs.use("c1", "sha256:by-id", "")
		it.imgs.use("c2", "", "b:1")
		it.imgs.use("c3", "c@sha256:digest", "")
		it.clk.Step(time.Hour)
		_, _ = it.gc.GarbageCollect(ctx) // first detection
		it.clk.Step(time.Hour)
		res, err := it.gc.GarbageCollect(ctx)
		var fse *gc.FreeSpaceError
		require.ErrorAs(t, err, &fse)
		assert.Equal(t, gc.FreeSpaceError{Wanted: 180, Freed: 30}, *fse, "980 of 1000 used: 180 wanted, only the unused 30 found")
		assert.Equal(t, []string{"sha256:free"}, it.imgs.removedIDs())
		assert.Equal(t, int64(30), res.Freed)
		msg := "Failed to garbage collect required amount of images. Attempted to free 180 bytes, but only found 30 bytes eligible to free."
		assert.Equal(t, msg, err.Error(), "the kubelet's words")
		assert.Contains(t, it.events.list(), "FreeDiskSpaceFailed: "+msg)
	})

	t.Run("images first detected less than MinAge ago are kept", func(t *testing.T) {
		it := newImageTest(t, p, 1000, 900, image("sha256:a", 50))
		_, err := it.gc.GarbageCollect(ctx)
		require.Error(t, err)
		it.clk.Step(p.MinAge - time.Second)
		_, err = it.gc.GarbageCollect(ctx)
		require.Error(t, err)
		assert.Empty(t, it.imgs.removedIDs(), "first detected 1m59s ago")
		it.clk.Step(time.Second)
		_, err = it.gc.GarbageCollect(ctx)
		require.Error(t, err, "900 of the 950 are not images: still short")
		assert.Equal(t, []string{"sha256:a"}, it.imgs.removedIDs(), "2m old")
	})

	t.Run("MaxAge removes images unused that long, whatever the disk usage", func(t *testing.T) {
		p := p
		p.MaxAge = time.Hour
		it := newImageTest(t, p, 1000, 0, image("sha256:idle", 10), image("sha256:busy", 10), image("sha256:late", 10))
		it.imgs.use("c1", "sha256:busy", "")
		_, err := it.gc.GarbageCollect(ctx)
		require.NoError(t, err)
		it.clk.Step(time.Hour + time.Second)
		it.imgs.mu.Lock()
		it.imgs.list = append(it.imgs.list, image("sha256:pulled", 10))
		it.imgs.mu.Unlock()
		res, err := it.gc.GarbageCollect(ctx)
		require.NoError(t, err)
		assert.Equal(t, []string{"sha256:idle", "sha256:late"}, it.imgs.removedIDs(),
			"unused since first detected over an hour ago; the one in use and the one just pulled stay")
		assert.Equal(t, gc.ImageReasonAge, res.Removed[0].Reason)
		assert.Equal(t, 2, res.UsagePercent, "the space pass still looks")
	})

	t.Run("a failed removal is passed over and reported", func(t *testing.T) {
		it := newImageTest(t, p, 1000, 850, image("sha256:stuck", 50), image("sha256:next", 50))
		it.imgs.removeErr["sha256:stuck"] = errors.New("image is in use by a container it did not list")
		it.clk.Step(time.Hour)
		_, _ = it.gc.GarbageCollect(ctx)
		it.clk.Step(time.Hour)
		res, err := it.gc.GarbageCollect(ctx)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "wanted to free 150 bytes, but freed 50 bytes space with errors in image deletion")
		assert.Contains(t, err.Error(), "sha256:stuck")
		assert.Equal(t, []string{"sha256:next"}, it.imgs.removedIDs())
		assert.Equal(t, int64(50), res.Freed)
	})

	t.Run("a zero capacity is InvalidDiskCapacity", func(t *testing.T) {
		it := newImageTest(t, p, 0, 0)
		_, err := it.gc.GarbageCollect(ctx)
		require.EqualError(t, err, "invalid capacity 0 on image filesystem")
		assert.Equal(t, []string{"InvalidDiskCapacity: invalid capacity 0 on image filesystem"}, it.events.list())
	})

	t.Run("DeleteUnusedImages removes every unused image older than MinAge", func(t *testing.T) {
		it := newImageTest(t, p, 1000, 0, image("sha256:a", 1), image("sha256:b", 1), image("sha256:pause", 1, "registry.k8s.io/pause:3.10"))
		it.imgs.use("c", "sha256:b", "")
		_, err := it.gc.GarbageCollect(ctx)
		require.NoError(t, err)
		it.clk.Step(p.MinAge)
		res, err := it.gc.DeleteUnusedImages(ctx)
		require.NoError(t, err)
		assert.Equal(t, []string{"sha256:a"}, it.imgs.removedIDs())
		assert.Len(t, res.Removed, 1)
	})
}

// TestImageGCRun: Run collects at once and every Period on the injected
// clock; ImageGCFailed is recorded only for a failure after a failure, as
// the kubelet does.
func TestImageGCRun(t *testing.T) {
	it := &imageTest{imgs: &images{listErr: errors.New("runtime down")}, events: &events{}, clk: testingclock.NewFakeClock(epoch)}
	passes := make(chan error, 1)
	g, err := gc.NewImageGC(gc.ImageConfig{Images: it.imgs, Containers: it.imgs, FsStats: &disk{capacity: 1000, imgs: it.imgs},
		Recorder: it.events, NodeName: "node-1", Clock: it.clk,
		OnCollect: func(_ gc.ImageResult, err error) { passes <- err }})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- g.Run(ctx) }()

	require.Error(t, <-passes, "first pass, at once")
	assert.Empty(t, it.events.list(), "a single failure is only logged")
	it.clk.Step(gc.DefaultImageGCPeriod)
	require.Error(t, <-passes)
	assert.Equal(t, []string{"ImageGCFailed: listing images: runtime down"}, it.events.list())
	it.imgs.mu.Lock()
	it.imgs.listErr = nil
	it.imgs.mu.Unlock()
	it.clk.Step(gc.DefaultImageGCPeriod)
	require.NoError(t, <-passes)
	cancel()
	require.NoError(t, <-done)
}

// TestImageGCRunDisabled: with HighThresholdPercent 100 and no MaxAge the
// kubelet does not run its image GC.
func TestImageGCRunDisabled(t *testing.T) {
	imgs := &images{}
	p := gc.DefaultImagePolicy()
	p.HighThresholdPercent = 100
	g, err := gc.NewImageGC(gc.ImageConfig{Images: imgs, Containers: imgs, Policy: &p,
		OnCollect: func(gc.ImageResult, error) { t.Error("collected while disabled") }})
	require.NoError(t, err)
	assert.True(t, g.Policy().Disabled())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, g.Run(ctx))
}
