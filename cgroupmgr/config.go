package cgroupmgr

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/containerd/cgroups/v3"
	"golang.org/x/sys/unix"
)

// DefaultMountRoot is where the kernel's cgroup hierarchies are mounted.
const DefaultMountRoot = "/sys/fs/cgroup"

// Config configures a Manager. The zero value is the kubelet's default.
type Config struct {
	// MountRoot is where cgroup hierarchies are mounted; default
	// /sys/fs/cgroup. Point it at a temp dir in tests.
	MountRoot string
	// Mode forces the cgroup mode; cgroups.Unavailable (0) detects it at New:
	// cgroups.Mode() for the default MountRoot, statfs of MountRoot otherwise.
	// Hybrid is managed like Legacy, through the v1 controllers (as the kubelet
	// does); the controller-less cgroup2 tree at <root>/unified is not touched.
	Mode cgroups.CGMode
	// Driver is the naming scheme (--cgroup-driver); default DriverCgroupfs.
	// DriverSystemd only changes names: cgroups are written through the
	// filesystem, no systemd units are created.
	Driver Driver
	// CgroupRoot is the parent of "kubepods" (--cgroup-root); default "/".
	CgroupRoot string
	// DisableCPUQuota leaves pod cgroups without a CFS quota (--cpu-cfs-quota=false).
	DisableCPUQuota bool
	// CPUCFSQuotaPeriod is the CFS period (--cpu-cfs-quota-period); default 100ms.
	CPUCFSQuotaPeriod time.Duration
	// PodPidsLimit is pids.max for each pod cgroup (--pod-max-pids); 0 or -1 means unlimited.
	PodPidsLimit int64
	// MemoryQoS sets memory.min on cgroup v2 (feature MemoryQoS); off by default.
	MemoryQoS bool
	// WeightFormula maps shares to cpu.weight on v2; default WeightLinear (KEP-2254).
	WeightFormula WeightFormula
}

func (c Config) withDefaults() (Config, error) {
	if c.MountRoot == "" {
		c.MountRoot = DefaultMountRoot
	}
	if !filepath.IsAbs(c.MountRoot) {
		return c, fieldError("MountRoot", fmt.Sprintf("%q", c.MountRoot), "must be an absolute path")
	}
	if c.Driver == "" {
		c.Driver = DriverCgroupfs
	}
	if c.Driver != DriverCgroupfs && c.Driver != DriverSystemd {
		return c, fieldError("Driver", fmt.Sprintf("%q", c.Driver), "must be \"cgroupfs\" or \"systemd\"")
	}
	if c.CgroupRoot == "" {
		c.CgroupRoot = "/"
	}
	if c.CPUCFSQuotaPeriod == 0 {
		c.CPUCFSQuotaPeriod = 100 * time.Millisecond
	}
	if c.CPUCFSQuotaPeriod < time.Millisecond || c.CPUCFSQuotaPeriod > time.Second {
		return c, fieldError("CPUCFSQuotaPeriod", c.CPUCFSQuotaPeriod, "must be within [1ms, 1s]")
	}
	if c.PodPidsLimit < -1 {
		return c, fieldError("PodPidsLimit", c.PodPidsLimit, "must be -1 (unlimited) or positive")
	}
	if c.PodPidsLimit == 0 {
		c.PodPidsLimit = -1
	}
	if c.WeightFormula != WeightLinear && c.WeightFormula != WeightNonLinear {
		return c, fieldError("WeightFormula", c.WeightFormula, "unknown formula")
	}
	if c.Mode == cgroups.Unavailable {
		c.Mode = detectMode(c.MountRoot)
	}
	if c.Mode == cgroups.Unavailable {
		return c, fieldError("MountRoot", fmt.Sprintf("%q", c.MountRoot), "no cgroup hierarchy found")
	}
	return c, nil
}

func detectMode(root string) cgroups.CGMode {
	if root == DefaultMountRoot {
		return cgroups.Mode()
	}
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err != nil {
		return cgroups.Unavailable
	}
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		return cgroups.Unified
	}
	if err := unix.Statfs(filepath.Join(root, "unified"), &st); err == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
		return cgroups.Hybrid
	}
	return cgroups.Legacy
}
