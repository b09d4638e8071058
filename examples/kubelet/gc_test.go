package main

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

func TestGCFlagsAndConfig(t *testing.T) {
	cfg, err := parseFlags(nil)
	require.NoError(t, err)
	assert.Equal(t, 1, cfg.gc.containers.MaxPerPodContainer, "the kubelet's defaults")
	assert.Equal(t, -1, cfg.gc.containers.MaxContainers)
	assert.Equal(t, 85, cfg.gc.images.HighThresholdPercent)
	assert.Equal(t, 80, cfg.gc.images.LowThresholdPercent)
	assert.Equal(t, 2*time.Minute, cfg.gc.images.MinAge)

	cfgFile := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"+
		"imageGCHighThresholdPercent: 90\nimageGCLowThresholdPercent: 70\nimageMinimumGCAge: 5m\nimageMaximumGCAge: 72h\n"), 0o644))
	cfg, err = parseFlags([]string{"--config", cfgFile, "--image-gc-low-threshold", "60", "--maximum-dead-containers-per-container", "2",
		"--minimum-container-ttl-duration", "1m", "--pod-infra-container-image", "registry.k8s.io/pause:3.10"})
	require.NoError(t, err)
	assert.Equal(t, 90, cfg.gc.images.HighThresholdPercent, "from the file")
	assert.Equal(t, 60, cfg.gc.images.LowThresholdPercent, "the flag wins")
	assert.Equal(t, 5*time.Minute, cfg.gc.images.MinAge)
	assert.Equal(t, 72*time.Hour, cfg.gc.images.MaxAge)
	assert.Equal(t, 2, cfg.gc.containers.MaxPerPodContainer)
	assert.Equal(t, time.Minute, cfg.gc.containers.MinAge)
	assert.Equal(t, "registry.k8s.io/pause:3.10", cfg.gc.sandboxImage)
	assert.Empty(t, cfg.ignoredFlags)
	assert.Empty(t, cfg.ignoredFields)
}

// The agent's container GC keeps one dead instance of a crashing
// container (the kubelet's --maximum-dead-containers-per-container 1).
// (A removed pod's containers go with its termination already.)
func TestAgentCollectsDeadContainers(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "crash.yaml"), []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: crash}\n"+
		"spec:\n  containers:\n  - {name: c, image: nodekit.local/testbin:1, args: [exit, \"1\"]}\n"), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, f, stop := startFakeAgent(t, ctx, dir)
	defer stop()
	dead := func() int {
		cs, err := f.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
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
