package gc_test

import (
	"testing"
	"time"

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
