package resources

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

func TestNodeAllocatable(t *testing.T) {
	cfg := AllocatableConfig{
		Capacity:       rl("cpu", "4", "memory", "8Gi", "ephemeral-storage", "100Gi", "pid", "4096"),
		KubeReserved:   rl("cpu", "500m", "memory", "1Gi"),
		SystemReserved: rl("cpu", "500m", "memory", "500Mi", "pid", "96"),
		HardEvictionThresholds: []EvictionThreshold{
			{Signal: SignalMemoryAvailable, Quantity: ptr.To(resource.MustParse("100Mi"))},
			{Signal: SignalNodeFsAvailable, Percentage: 0.1},
		},
	}
	got, err := NodeAllocatable(cfg)
	require.NoError(t, err)
	for name, want := range rl("cpu", "3", "memory", "6568Mi", "ephemeral-storage", "90Gi", "pid", "4000") {
		q := got[name]
		assert.Zero(t, want.Cmp(q), "%s: want %s got %s", name, want.String(), q.String())
	}
	pods, err := PodsCgroupLimits(cfg)
	require.NoError(t, err)
	want := resource.MustParse("6668Mi")
	assert.Zero(t, want.Cmp(pods[v1.ResourceMemory]), "kubepods limit excludes eviction")

	over := AllocatableConfig{Capacity: rl("memory", "1Gi"), KubeReserved: rl("memory", "2Gi")}
	got, err = NodeAllocatable(over)
	require.NoError(t, err)
	assert.True(t, got.Memory().IsZero(), "floored at 0")
}

func TestNodeAllocatableRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		cfg  AllocatableConfig
		want string
	}{
		{AllocatableConfig{Capacity: rl("cpu", "-1")}, "Capacity[cpu]=-1: must not be negative"},
		{AllocatableConfig{KubeReserved: rl("memory", "-1Gi")}, "KubeReserved[memory]=-1Gi"},
		{AllocatableConfig{HardEvictionThresholds: []EvictionThreshold{{Signal: "bogus"}}}, `HardEvictionThresholds[0].Signal="bogus"`},
		{AllocatableConfig{HardEvictionThresholds: []EvictionThreshold{{Signal: SignalMemoryAvailable, Percentage: 2}}}, "HardEvictionThresholds[0].Percentage=2"},
		{AllocatableConfig{HardEvictionThresholds: []EvictionThreshold{{Signal: SignalMemoryAvailable, Quantity: ptr.To(resource.MustParse("-1"))}}}, "HardEvictionThresholds[0].Quantity=-1"},
	} {
		_, err := NodeAllocatable(tc.cfg)
		require.ErrorContains(t, err, tc.want)
	}
}
