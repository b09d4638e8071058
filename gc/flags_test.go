package gc_test

import (
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodekit-dev/nodekit/gc"
)

func TestPolicyFlags(t *testing.T) {
	containers, images := gc.DefaultContainerPolicy(), gc.DefaultImagePolicy()
	fs := flag.NewFlagSet("kubelet", flag.ContinueOnError)
	containers.AddFlags(fs)
	images.AddFlags(fs)
	require.NoError(t, fs.Parse(nil))
	assert.Equal(t, gc.DefaultContainerPolicy(), containers, "the defaults stay")
	assert.Equal(t, gc.DefaultImagePolicy(), images)
	require.NoError(t, fs.Parse([]string{"--minimum-container-ttl-duration=1m", "--maximum-dead-containers-per-container=2",
		"--maximum-dead-containers=50", "--image-gc-high-threshold=90", "--image-gc-low-threshold=70"}))
	assert.Equal(t, gc.ContainerPolicy{MinAge: time.Minute, MaxPerPodContainer: 2, MaxContainers: 50}, containers)
	assert.Equal(t, []int{90, 70}, []int{images.HighThresholdPercent, images.LowThresholdPercent})
	assert.Equal(t, gc.DefaultImagePolicy().MinAge, images.MinAge, "a config field only")
}
