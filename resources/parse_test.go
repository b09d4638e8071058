package resources

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

func TestParseResourceListAndThresholds(t *testing.T) {
	l, err := ParseResourceList("--kube-reserved", "cpu=200m, memory=500Mi,pid=1000")
	require.NoError(t, err)
	assert.Equal(t, rl("cpu", "200m", "memory", "500Mi", "pid", "1000"), l)
	for _, bad := range []string{"cpu", "gpu=1", "memory=-1", "cpu=lots"} {
		_, err := ParseResourceList("--kube-reserved", bad)
		assert.ErrorContains(t, err, "--kube-reserved: Invalid value", bad)
	}
	ts, err := ParseThresholds("--eviction-hard", "memory.available<200Mi,nodefs.available<5%,imagefs.available<15%")
	require.NoError(t, err)
	require.Len(t, ts, 2, "imagefs is eviction's, not allocatable's")
	assert.Equal(t, "200Mi", ts[0].Quantity.String())
	assert.InDelta(t, 0.05, ts[1].Percentage, 1e-9)
	for _, bad := range []string{"memory.available=1Gi", "nodefs.available<150%", "memory.available<-1"} {
		_, err := ParseThresholds("--eviction-hard", bad)
		assert.ErrorContains(t, err, "--eviction-hard: Invalid value", bad)
	}
	alloc, err := NodeAllocatable(AllocatableConfig{Capacity: rl("memory", "1Gi"), HardEvictionThresholds: ts})
	require.NoError(t, err)
	mem := alloc[v1.ResourceMemory]
	assert.Equal(t, "824Mi", mem.String())
}
