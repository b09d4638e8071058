package cgroupmgr

import (
	"testing"

	"github.com/containerd/cgroups/v3/cgroup2"
	"github.com/stretchr/testify/assert"

	"github.com/nodekit-dev/nodekit/resources"
)

func TestSharesAndQuotaPublishedValues(t *testing.T) {
	for _, tc := range []struct {
		milli  int64
		shares uint64
		quota  int64
	}{{0, 2, 0}, {100, 102, 10000}, {1000, 1024, 100000}, {2500, 2560, 250000}} {
		assert.Equal(t, tc.shares, resources.MilliCPUToShares(tc.milli), "shares of %dm", tc.milli)
		assert.Equal(t, tc.quota, resources.MilliCPUToQuota(tc.milli, resources.QuotaPeriod), "quota of %dm", tc.milli)
	}
}

func TestCPUSharesToWeight(t *testing.T) {
	for _, tc := range []struct {
		shares            uint64
		linear, nonLinear uint64
	}{
		{0, 1, 1}, {2, 1, 1}, {102, 4, 17}, {1024, 39, 100}, {2048, 79, 174}, {262144, 10000, 10000}, {300000, 10000, 10000},
	} {
		assert.Equal(t, tc.linear, CPUSharesToWeight(tc.shares, WeightLinear), "linear shares=%d", tc.shares)
		assert.Equal(t, tc.nonLinear, CPUSharesToWeight(tc.shares, WeightNonLinear), "non-linear shares=%d", tc.shares)
		if tc.shares >= 2 && tc.shares <= 262144 {
			// Same formula as containerd/cgroups (taken from opencontainers/cgroups, runc >= 1.3.2).
			assert.Equal(t, cgroup2.ConvertCPUSharesToCgroupV2Value(tc.shares), CPUSharesToWeight(tc.shares, WeightNonLinear))
		}
	}
}
