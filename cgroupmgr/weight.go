package cgroupmgr

import (
	"math"

	"github.com/nodekit-dev/nodekit/resources"
)

// WeightFormula selects how cgroup v1 cpu.shares become cgroup v2 cpu.weight.
type WeightFormula int

const (
	// WeightLinear is KEP-2254's linear mapping, what the kubelet uses today:
	// weight = 1 + ((shares-2)*9999)/262142, so 2 -> 1, 1024 -> 39, 262144 -> 10000.
	WeightLinear WeightFormula = iota
	// WeightNonLinear is the quadratic-in-log2 mapping of runc >= 1.3.2 and
	// opencontainers/cgroups (also containerd/cgroups' ConvertCPUSharesToCgroupV2Value):
	// weight = ceil(10^((log2(s)^2 + 125*log2(s))/612 - 7/34)), clamped to
	// [1, 10000], so 1024 -> 100 (the kernel's default weight).
	WeightNonLinear
)

// CPUSharesToWeight converts cpu.shares to cpu.weight with the formula. shares
// is first clamped to [MinShares, MaxShares] as the kernel would.
func CPUSharesToWeight(shares uint64, f WeightFormula) uint64 {
	if shares < resources.MinShares {
		shares = resources.MinShares
	}
	if shares > resources.MaxShares {
		shares = resources.MaxShares
	}
	if f == WeightNonLinear {
		l := math.Log2(float64(shares))
		w := uint64(math.Ceil(math.Pow(10, (l*l+125*l)/612.0-7.0/34.0)))
		return min(max(w, 1), 10000)
	}
	return 1 + ((shares-2)*9999)/262142
}
