//go:build linux

package eviction

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/utils/clock"

	"github.com/nodekit-dev/nodekit/internal/fsstats"
)

// RuntimeFilesystems are where the runtime keeps images and containers'
// writable layers. Containers empty: with the images.
type RuntimeFilesystems struct {
	Images, Containers string
}

// RuntimeFsInfo gives the mountpoints of the runtime's filesystems (CRI
// ImageFsInfo's first image and container filesystems; containers ""
// when they are with the images). *runtime.Client implements it.
type RuntimeFsInfo interface {
	FilesystemMountpoints(ctx context.Context) (images, containers string, err error)
}

// RuntimeFsInfoFunc adapts a function to a RuntimeFsInfo.
type RuntimeFsInfoFunc func(ctx context.Context) (images, containers string, err error)

// FilesystemMountpoints calls f.
func (f RuntimeFsInfoFunc) FilesystemMountpoints(ctx context.Context) (images, containers string, err error) {
	return f(ctx)
}

// LinuxConfig says where LinuxSignals reads; zero fields take the
// kubelet's defaults.
type LinuxConfig struct {
	// RootDir is --root-dir (/var/lib/kubelet): its filesystem is nodefs.
	RootDir string
	// CgroupMount is where the cgroup hierarchy is mounted (/sys/fs/cgroup).
	CgroupMount string
	// CgroupVersion is 1 or 2; 0 detects it from CgroupMount.
	CgroupVersion int
	// KubepodsCgroup is the kubepods cgroup's path under the mount
	// (cgroupmgr's Path(KubepodsCgroupName()): "kubepods", or
	// "kubepods.slice" with systemd); empty: no allocatableMemory.available.
	KubepodsCgroup string
	// Runtime gives imagefs.* and containerfs.*; nil: none.
	Runtime RuntimeFsInfo
	// ProcRoot is /proc.
	ProcRoot string
	Clock    clock.PassiveClock
}

// LinuxSignals reads the node's signals as the kubelet's cadvisor and
// stats providers compute them:
//   - memory.available: MemTotal (/proc/meminfo) minus the root cgroup's
//     working set (usage minus inactive_file; on cgroup v2, whose root has
//     no memory.current, anon + file of its memory.stat, as runc);
//   - allocatableMemory.available: the kubepods cgroup's memory limit minus
//     its working set (none while it has no limit);
//   - nodefs.available and nodefs.inodesFree: statfs of RootDir (blocks
//     available to unprivileged users, free inodes);
//   - imagefs.* and containerfs.*: statfs of the runtime's mountpoints;
//   - pid.available: min(kernel.pid_max, kernel.threads-max) minus the
//     tasks in /proc/loadavg.
//
// It implements SignalProvider and DiskInfo.
type LinuxSignals struct {
	cfg LinuxConfig
}

// NewLinuxSignals checks cfg (paths absolute, the cgroup version) and
// detects the cgroup version when not given.
func NewLinuxSignals(cfg LinuxConfig) (*LinuxSignals, error) {
	if cfg.RootDir == "" {
		cfg.RootDir = "/var/lib/kubelet"
	}
	if cfg.CgroupMount == "" {
		cfg.CgroupMount = "/sys/fs/cgroup"
	}
	if cfg.ProcRoot == "" {
		cfg.ProcRoot = "/proc"
	}
	for name, p := range map[string]string{"RootDir": cfg.RootDir, "CgroupMount": cfg.CgroupMount, "ProcRoot": cfg.ProcRoot} {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("eviction: LinuxConfig.%s: Invalid value: %q: must be an absolute path", name, p)
		}
	}
	if k := cfg.KubepodsCgroup; k != "" && (filepath.IsAbs(k) || !filepath.IsLocal(k)) {
		return nil, fmt.Errorf("eviction: LinuxConfig.KubepodsCgroup: Invalid value: %q: must be a path under CgroupMount", k)
	}
	switch cfg.CgroupVersion {
	case 0:
		var st unix.Statfs_t
		if err := unix.Statfs(cfg.CgroupMount, &st); err != nil {
			return nil, fmt.Errorf("eviction: LinuxConfig.CgroupMount: %w", err)
		}
		cfg.CgroupVersion = 1
		if st.Type == unix.CGROUP2_SUPER_MAGIC {
			cfg.CgroupVersion = 2
		}
	case 1, 2:
	default:
		return nil, fmt.Errorf("eviction: LinuxConfig.CgroupVersion: Invalid value: %d: must be 0 (detect), 1 or 2", cfg.CgroupVersion)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &LinuxSignals{cfg: cfg}, nil
}

// Signals reads every signal it can; the error joins what it could not
// read (a missing kubepods cgroup is not an error).
func (l *LinuxSignals) Signals(ctx context.Context) (Observations, error) {
	now := l.cfg.Clock.Now()
	out := Observations{}
	var errs []error
	total, err := l.memTotal()
	if err == nil {
		var ws int64
		ws, err = l.rootWorkingSet()
		if err == nil {
			out[SignalMemoryAvailable] = Observation{max(total-ws, 0), total, now}
		}
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", SignalMemoryAvailable, err))
	}
	if l.cfg.KubepodsCgroup != "" {
		limit, ws, err := l.kubepods()
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", SignalAllocatableMemoryAvailable, err))
		case limit > 0:
			out[SignalAllocatableMemoryAvailable] = Observation{max(limit-ws, 0), limit, now}
		}
	}
	fs := func(dir, bytesSignal, inodesSignal string) {
		st, err := fsstats.Statfs(dir)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", bytesSignal, err))
			return
		}
		out[bytesSignal] = Observation{int64(st.Available), int64(st.Capacity), now}
		out[inodesSignal] = Observation{int64(st.InodesFree), int64(st.Inodes), now}
	}
	fs(l.cfg.RootDir, SignalNodeFsAvailable, SignalNodeFsInodesFree)
	if l.cfg.Runtime != nil {
		rfs, err := l.runtimeFs(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", SignalImageFsAvailable, err))
		} else if rfs.Images != "" {
			fs(rfs.Images, SignalImageFsAvailable, SignalImageFsInodesFree)
			if rfs.Containers == "" {
				rfs.Containers = rfs.Images
			}
			fs(rfs.Containers, SignalContainerFsAvailable, SignalContainerFsInodesFree)
		}
	}
	maxPID, running, err := l.pids()
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", SignalPIDAvailable, err))
	} else {
		out[SignalPIDAvailable] = Observation{maxPID - running, maxPID, now}
	}
	return out, errors.Join(errs...)
}

// HasDedicatedImageFs reports whether the runtime's images are on another
// device than RootDir.
func (l *LinuxSignals) HasDedicatedImageFs(ctx context.Context) (bool, error) {
	rfs, err := l.runtimeFs(ctx)
	if err != nil || rfs.Images == "" {
		return false, err
	}
	return differentDevices(l.cfg.RootDir, rfs.Images)
}

// HasDedicatedContainerFs reports whether containers' writable layers are
// on another device than the images.
func (l *LinuxSignals) HasDedicatedContainerFs(ctx context.Context) (bool, error) {
	rfs, err := l.runtimeFs(ctx)
	if err != nil || rfs.Images == "" || rfs.Containers == "" {
		return false, err
	}
	return differentDevices(rfs.Images, rfs.Containers)
}

func (l *LinuxSignals) runtimeFs(ctx context.Context) (RuntimeFilesystems, error) {
	if l.cfg.Runtime == nil {
		return RuntimeFilesystems{}, nil
	}
	images, containers, err := l.cfg.Runtime.FilesystemMountpoints(ctx)
	return RuntimeFilesystems{Images: images, Containers: containers}, err
}

func differentDevices(a, b string) (bool, error) {
	var sa, sb unix.Stat_t
	if err := unix.Stat(a, &sa); err != nil {
		return false, fmt.Errorf("stat %s: %w", a, err)
	}
	if err := unix.Stat(b, &sb); err != nil {
		return false, fmt.Errorf("stat %s: %w", b, err)
	}
	return sa.Dev != sb.Dev, nil
}

// memTotal is MemTotal of /proc/meminfo, cadvisor's memory capacity.
func (l *LinuxSignals) memTotal() (int64, error) {
	p := filepath.Join(l.cfg.ProcRoot, "meminfo")
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: MemTotal: %w", p, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("%s: no MemTotal", p)
}

// memoryDir is the memory controller's directory of a cgroup path.
func (l *LinuxSignals) memoryDir(path string) string {
	if l.cfg.CgroupVersion == 2 {
		return filepath.Join(l.cfg.CgroupMount, path)
	}
	return filepath.Join(l.cfg.CgroupMount, "memory", path)
}

// rootWorkingSet is the root cgroup's usage minus inactive_file.
func (l *LinuxSignals) rootWorkingSet() (int64, error) {
	dir := l.memoryDir("")
	stat, err := readKeyValues(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return 0, err
	}
	if l.cfg.CgroupVersion == 2 {
		return workingSet(stat["anon"]+stat["file"], stat["inactive_file"]), nil
	}
	usage, err := readInt(filepath.Join(dir, "memory.usage_in_bytes"))
	if err != nil {
		return 0, err
	}
	return workingSet(usage, stat["total_inactive_file"]), nil
}

// kubepods is the kubepods cgroup's memory limit (0: unlimited) and
// working set.
func (l *LinuxSignals) kubepods() (limit, ws int64, err error) {
	dir := l.memoryDir(l.cfg.KubepodsCgroup)
	stat, err := readKeyValues(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return 0, 0, err
	}
	usageFile, limitFile, inactive := "memory.usage_in_bytes", "memory.limit_in_bytes", "total_inactive_file"
	if l.cfg.CgroupVersion == 2 {
		usageFile, limitFile, inactive = "memory.current", "memory.max", "inactive_file"
	}
	usage, err := readInt(filepath.Join(dir, usageFile))
	if err != nil {
		return 0, 0, err
	}
	b, err := os.ReadFile(filepath.Join(dir, limitFile))
	if err != nil {
		return 0, 0, err
	}
	if s := strings.TrimSpace(string(b)); s != "max" {
		// Above 1 EiB is unlimited, as the kubelet's isMemoryUnlimited (v1
		// writes "unlimited" as the largest page-aligned int64).
		if v, err := strconv.ParseUint(s, 10, 64); err != nil {
			return 0, 0, fmt.Errorf("%s: %w", filepath.Join(dir, limitFile), err)
		} else if v <= 1<<62 {
			limit = int64(v)
		}
	}
	return limit, workingSet(usage, stat[inactive]), nil
}

func workingSet(usage, inactiveFile int64) int64 { return max(usage-inactiveFile, 0) }

// pids is the kubelet's pidlimit.Stats: the smaller of kernel.pid_max and
// kernel.threads-max, and the number of tasks (/proc/loadavg, else
// sysinfo).
func (l *LinuxSignals) pids() (maxPID, running int64, err error) {
	maxPID = -1
	for _, f := range []string{"sys/kernel/pid_max", "sys/kernel/threads-max"} {
		if v, err := readInt(filepath.Join(l.cfg.ProcRoot, f)); err == nil && (maxPID < 0 || v < maxPID) {
			maxPID = v
		}
	}
	if maxPID < 0 {
		return 0, 0, fmt.Errorf("neither %s/sys/kernel/pid_max nor threads-max is readable", l.cfg.ProcRoot)
	}
	b, err := os.ReadFile(filepath.Join(l.cfg.ProcRoot, "loadavg"))
	if err == nil {
		// "0.02 0.21 0.42 1/84 6676": running/total tasks.
		if f := strings.Fields(string(b)); len(f) >= 5 {
			if _, total, ok := strings.Cut(f[3], "/"); ok {
				if running, err = strconv.ParseInt(total, 10, 64); err == nil {
					return maxPID, running, nil
				}
			}
		}
	}
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0, 0, fmt.Errorf("sysinfo: %w", err)
	}
	return maxPID, int64(si.Procs), nil
}

func readInt(p string) (int64, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", p, err)
	}
	return v, nil
}

// readKeyValues reads a cgroup "key value" file (memory.stat).
func readKeyValues(p string) (map[string]int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", p, k, err)
		}
		out[k] = n
	}
	return out, sc.Err()
}
