package cgroupmgr

// Usage is a cgroup's resource use, as eviction and /stats/summary need it.
type Usage struct {
	MemoryUsageBytes      uint64
	MemoryWorkingSetBytes uint64 // usage - inactive_file, floored at 0
	CPUUsageNanoseconds   uint64 // cumulative
	PidsCurrent           uint64
}

// fsDriver writes one cgroup version's files. Paths are absolute inside the
// hierarchy ("/kubepods/burstable/pod..."), already in the driver's form.
type fsDriver interface {
	create(path string, rc *ResourceConfig) error
	update(path string, rc *ResourceConfig) error
	// destroy removes the cgroup, or returns *BusyError if processes remain.
	// A missing cgroup is not an error.
	destroy(path string) error
	exists(path string) bool
	// pids lists processes in the cgroup and its descendants.
	pids(path string) ([]int, error)
	// children lists the names of the direct child cgroups.
	children(path string) ([]string, error)
	usage(path string) (*Usage, error)
}

func workingSet(usage, inactiveFile uint64) uint64 {
	if inactiveFile > usage {
		return 0
	}
	return usage - inactiveFile
}
