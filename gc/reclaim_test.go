package gc_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodekit-dev/nodekit/gc"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

// TestNodeReclaimer: under disk pressure the eviction manager's pass
// removes a terminated pod's dead containers and sandbox, then every
// unused image past its minimum age, whatever the thresholds.
func TestNodeReclaimer(t *testing.T) {
	e := newCRIEnv(t)
	p := e.pod("uid-p", "p", nil)
	e.dead(p, "app", 0)
	require.NoError(t, e.client.StopPodSandbox(e.ctx, p.sandbox))
	cg, err := gc.NewContainerGC(gc.ContainerConfig{Runtime: e.client, PodState: terminated{"uid-p"}, PodLogsDir: e.logs, Clock: e.clk})
	require.NoError(t, err)
	empty := gc.FsStatsFunc(func(string) (uint64, uint64, error) { return 1000, 1000, nil })
	ig, err := gc.NewImageGC(gc.ImageConfig{Images: e.client, Containers: e.client, SandboxImage: fake.PauseImage,
		FsStats: empty, Clock: e.clk})
	require.NoError(t, err)
	r := gc.NodeReclaimer{Containers: cg, Images: ig}

	require.NoError(t, r.DeleteAllUnusedContainers(e.ctx))
	cs, err := e.client.ListContainers(e.ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, cs)
	sbs, err := e.client.ListPodSandbox(e.ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, sbs)

	require.NoError(t, r.DeleteUnusedImages(e.ctx)) // first sight: all younger than MinAge
	e.clk.Step(gc.DefaultImageMinimumGCAge)
	require.NoError(t, r.DeleteUnusedImages(e.ctx))
	imgs, err := e.client.ListImages(e.ctx, nil)
	require.NoError(t, err)
	require.Len(t, imgs, 1, "the disk is nearly empty, yet all unused images go")
	assert.Equal(t, []string{fake.PauseImage}, imgs[0].RepoTags)

	none := gc.NodeReclaimer{}
	assert.NoError(t, none.DeleteAllUnusedContainers(e.ctx))
	assert.NoError(t, none.DeleteUnusedImages(e.ctx))
}
