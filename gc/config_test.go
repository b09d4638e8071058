package gc_test

import (
	goruntime "runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodekit-dev/nodekit/gc"
)

func TestContainerConfig(t *testing.T) {
	s := &stubRuntime{}
	g, err := gc.NewContainerGC(gc.ContainerConfig{Runtime: s})
	require.NoError(t, err)
	assert.Equal(t, gc.ContainerPolicy{MinAge: 0, MaxPerPodContainer: 1, MaxContainers: -1}, g.Policy(), "the kubelet's defaults")

	keepNone := gc.ContainerPolicy{MaxPerPodContainer: 0, MaxContainers: 0}
	g, err = gc.NewContainerGC(gc.ContainerConfig{Runtime: s, Policy: &keepNone})
	require.NoError(t, err)
	assert.Equal(t, keepNone, g.Policy(), "a given policy is taken as it is: 0 keeps none")

	for _, tc := range []struct {
		name string
		cfg  gc.ContainerConfig
		err  string
	}{
		{"no runtime", gc.ContainerConfig{}, "gc: ContainerConfig.Runtime: Required value"},
		{"negative MinAge", gc.ContainerConfig{Runtime: s, Policy: &gc.ContainerPolicy{MinAge: -time.Second}},
			"gc: ContainerConfig.Policy.MinAge: Invalid value: -1s: must not be negative"},
		{"negative period", gc.ContainerConfig{Runtime: s, Period: -time.Minute},
			"gc: ContainerConfig.Period: Invalid value: -1m0s: must not be negative"},
		{"relative logs dir", gc.ContainerConfig{Runtime: s, PodLogsDir: "logs"},
			`gc: ContainerConfig.PodLogsDir: Invalid value: "logs": must be an absolute path`},
		{"bad selector key", gc.ContainerConfig{Runtime: s, SandboxSelector: map[string]string{"a b": "x"}},
			`gc: ContainerConfig.SandboxSelector: Invalid value: "a b": name part must consist of alphanumeric characters`},
		{"bad selector value", gc.ContainerConfig{Runtime: s, SandboxSelector: map[string]string{"node": "a/b"}},
			`gc: ContainerConfig.SandboxSelector[node]: Invalid value: "a/b": a valid label must be`},
		{"recorder without node", gc.ContainerConfig{Runtime: s, Recorder: &events{}},
			"gc: ContainerConfig.NodeName: Required value: the Recorder records events on the Node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gc.NewContainerGC(tc.cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

func TestImageConfig(t *testing.T) {
	imgs := &images{}
	g, err := gc.NewImageGC(gc.ImageConfig{Images: imgs, Containers: imgs})
	require.NoError(t, err)
	assert.Equal(t, gc.ImagePolicy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 2 * time.Minute}, g.Policy(),
		"the kubelet's defaults")
	assert.False(t, g.Policy().Disabled())

	p := func(high, low int, minAge, maxAge time.Duration) *gc.ImagePolicy {
		return &gc.ImagePolicy{HighThresholdPercent: high, LowThresholdPercent: low, MinAge: minAge, MaxAge: maxAge}
	}
	for _, tc := range []struct {
		name string
		cfg  gc.ImageConfig
		err  string
	}{
		{"no images", gc.ImageConfig{Containers: imgs}, "gc: ImageConfig.Images: Required value"},
		{"no containers", gc.ImageConfig{Images: imgs}, "gc: ImageConfig.Containers: Required value"},
		{"high over 100", gc.ImageConfig{Images: imgs, Containers: imgs, Policy: p(101, 80, 0, 0)},
			"gc: ImageConfig.Policy.HighThresholdPercent: Invalid value: 101: must be between 0 and 100"},
		{"negative low", gc.ImageConfig{Images: imgs, Containers: imgs, Policy: p(85, -1, 0, 0)},
			"gc: ImageConfig.Policy.LowThresholdPercent: Invalid value: -1: must be between 0 and 100"},
		{"low above high", gc.ImageConfig{Images: imgs, Containers: imgs, Policy: p(80, 85, 0, 0)},
			"gc: ImageConfig.Policy.LowThresholdPercent: Invalid value: 85: must not be above HighThresholdPercent (80)"},
		{"negative MinAge", gc.ImageConfig{Images: imgs, Containers: imgs, Policy: p(85, 80, -time.Second, 0)},
			"gc: ImageConfig.Policy.MinAge: Invalid value: -1s: must not be negative"},
		{"negative MaxAge", gc.ImageConfig{Images: imgs, Containers: imgs, Policy: p(85, 80, 0, -time.Second)},
			"gc: ImageConfig.Policy.MaxAge: Invalid value: -1s: must not be negative"},
		{"MaxAge below MinAge", gc.ImageConfig{Images: imgs, Containers: imgs, Policy: p(85, 80, time.Hour, time.Minute)},
			"gc: ImageConfig.Policy.MaxAge: Invalid value: 1m0s: must not be below MinAge (1h0m0s)"},
		{"negative period", gc.ImageConfig{Images: imgs, Containers: imgs, Period: -1},
			"gc: ImageConfig.Period: Invalid value: -1ns: must not be negative"},
		{"recorder without node", gc.ImageConfig{Images: imgs, Containers: imgs, Recorder: &events{}},
			"gc: ImageConfig.NodeName: Required value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gc.NewImageGC(tc.cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

func TestStatfs(t *testing.T) {
	if goruntime.GOOS != "linux" {
		t.Skip("statfs is implemented on Linux only")
	}
	capacity, available, err := gc.Statfs.FsStats(t.TempDir())
	require.NoError(t, err)
	assert.NotZero(t, capacity)
	assert.LessOrEqual(t, available, capacity)
	_, _, err = gc.Statfs.FsStats("")
	assert.ErrorContains(t, err, "no path")
	_, _, err = gc.Statfs.FsStats("/no/such/dir")
	assert.ErrorContains(t, err, "/no/such/dir")
}
