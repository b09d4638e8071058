package resources

// Constants from the kubelet (pkg/kubelet/cm/helpers_linux.go).
const (
	// MinShares is the smallest value the kernel accepts for cpu.shares.
	MinShares = 2
	// MaxShares is the largest value the kernel accepts for cpu.shares.
	MaxShares = 262144
	// SharesPerCPU is the number of shares one whole CPU is worth.
	SharesPerCPU = 1024
	// MilliCPUToCPU is the number of millicores in one CPU.
	MilliCPUToCPU = 1000
	// QuotaPeriod is the default CFS period in microseconds (100 ms).
	QuotaPeriod = 100000
	// MinQuotaPeriod is the smallest CFS quota in microseconds the kernel accepts (1 ms).
	MinQuotaPeriod = 1000
	// MinMilliCPULimit is the smallest CPU limit a quota can express
	// (MinQuotaPeriod over QuotaPeriod).
	MinMilliCPULimit = 10
)

// MilliCPUToShares converts millicores to cpu.shares: 0 becomes MinShares
// (the kernel's floor, so a BestEffort container still gets a sliver), any
// other value m*1024/1000 clamped to [MinShares, MaxShares].
func MilliCPUToShares(milliCPU int64) uint64 {
	if milliCPU == 0 {
		return MinShares
	}
	shares := milliCPU * SharesPerCPU / MilliCPUToCPU
	if shares < MinShares {
		return MinShares
	}
	if shares > MaxShares {
		return MaxShares
	}
	return uint64(shares)
}

// MilliCPUToQuota converts a CPU limit in millicores to a CFS quota in
// microseconds for the given period. 0 (no limit) gives 0, meaning "no quota";
// anything below the kernel's minimum is raised to MinQuotaPeriod.
func MilliCPUToQuota(milliCPU, period int64) int64 {
	if milliCPU == 0 {
		return 0
	}
	quota := milliCPU * period / MilliCPUToCPU
	if quota < MinQuotaPeriod {
		return MinQuotaPeriod
	}
	return quota
}

// SharesToMilliCPU is the kubelet's SharesToMilliCPU, MilliCPUToShares'
// inverse: below MinShares 0, else shares*1000/1024 rounded up.
func SharesToMilliCPU(shares int64) int64 {
	if shares < MinShares {
		return 0
	}
	return (shares*MilliCPUToCPU + SharesPerCPU - 1) / SharesPerCPU
}

// QuotaToMilliCPU is the kubelet's QuotaToMilliCPU: -1 (no quota) is 0,
// else quota*1000/period.
func QuotaToMilliCPU(quota, period int64) int64 {
	if quota == -1 || period <= 0 {
		return 0
	}
	return quota * MilliCPUToCPU / period
}
