package nodeagent_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit-dev/nodekit/internal/poll"
)

// The agent's container GC keeps one dead instance of a crashing
// container (the kubelet's --maximum-dead-containers-per-container 1).
// (A removed pod's containers go with its termination already.)
func TestAgentCollectsDeadContainers(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "crash.yaml"), []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: crash}\n"+
		"spec:\n  containers:\n  - {name: c, image: nodekit.local/testbin:1, args: [exit, \"1\"]}\n"), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := startFakeAgent(t, ctx, dir)
	dead := func() int {
		cs, err := a.fake.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
		require.NoError(t, err)
		n := 0
		for _, c := range cs.Containers {
			if c.State == runtimeapi.ContainerState_CONTAINER_EXITED {
				n++
			}
		}
		return n
	}
	poll.Eventually(t, func() bool { return dead() >= 2 }, 20*time.Second, 20*time.Millisecond, "two dead instances of the crashing container")
	poll.Eventually(t, a.AllSourcesReady, 20*time.Second, 20*time.Millisecond, "all sources ready")
	res, err := a.ContainerGC().GarbageCollect(ctx)
	require.NoError(t, err)
	assert.NotEmpty(t, res.Containers)
	// The next restart is 20s of back-off away: no new exit meanwhile.
	assert.Equal(t, 1, dead(), "the newest dead instance kept, the older removed")
}
