package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
