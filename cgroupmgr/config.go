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

// Mode is the host's cgroup layout.
type Mode string

// The cgroup modes.
const (
	// ModeAuto detects the mode at New.
	ModeAuto Mode = ""
	// ModeV1 is the legacy layout: a v1 hierarchy per controller.
	ModeV1 Mode = "v1"
	// ModeHybrid is v1 controllers plus a controller-less cgroup2 tree.
	ModeHybrid Mode = "hybrid"
	// ModeV2 is the unified cgroup2 hierarchy.
	ModeV2 Mode = "v2"
)

// Config configures a Manager. The zero value is the kubelet's default.
type Config struct {
	// MountRoot is where cgroup hierarchies are mounted; default
	// /sys/fs/cgroup. Point it at a temp dir in tests.
	MountRoot string
	// Mode forces the cgroup mode; ModeAuto ("") detects it at New from
	// the filesystem at MountRoot. ModeHybrid is managed like ModeV1,
	// through the v1 controllers (as the kubelet does); the controller-less
	// cgroup2 tree at <root>/unified is not touched.
	Mode Mode
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
	if c.Mode == ModeAuto {
		c.Mode = detectMode(c.MountRoot)
	}
	if c.Mode == ModeAuto {
		return c, fieldError("MountRoot", fmt.Sprintf("%q", c.MountRoot), "no cgroup hierarchy found")
	}
	return c, nil
}

// HostMode detects the cgroup mode of the host's hierarchy at
// DefaultMountRoot (ModeAuto if none is found): what the kubelet's
// isCgroup2UnifiedMode asks, e.g. for kuberuntime.ManagerConfig.CgroupV2.
func HostMode() Mode { return detectMode(DefaultMountRoot) }

func detectMode(root string) Mode {
	if root == DefaultMountRoot {
		switch cgroups.Mode() {
		case cgroups.Unified:
			return ModeV2
		case cgroups.Hybrid:
			return ModeHybrid
		case cgroups.Legacy:
			return ModeV1
		}
		return ModeAuto
	}
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err != nil {
		return ModeAuto
	}
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		return ModeV2
	}
	if err := unix.Statfs(filepath.Join(root, "unified"), &st); err == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
		return ModeHybrid
	}
	return ModeV1
}
