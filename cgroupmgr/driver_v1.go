package cgroupmgr

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/containerd/cgroups/v3/cgroup1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// v1Driver manages the cpu, cpuacct, memory and pids controllers of a cgroup
// v1 (or hybrid) hierarchy mounted under root, through containerd's cgroup1.
// A pod cgroup is removed from every other hierarchy mounted there too
// (blkio, cpuset, devices, freezer, name=systemd, the hybrid unified one):
// runc creates it there as its containers' parent and leaves it, and the
// kubelet's cgroup manager removes a pod cgroup from every hierarchy.
type v1Driver struct {
	root       string
	subsystems []cgroup1.Subsystem
	others     []string // the other hierarchies' mount points
	// mkdirHook, when set (tests), is called for each directory this driver
	// creates, so a fake tree can grow the files the kernel would.
	mkdirHook func(dir string) error
}

type v1Pather interface {
	cgroup1.Subsystem
	Path(string) string
}

func newV1Driver(root string) (*v1Driver, error) {
	d := &v1Driver{root: root}
	for _, s := range []v1Pather{
		cgroup1.NewCpu(root), cgroup1.NewCpuacct(root), cgroup1.NewMemory(root), cgroup1.NewPids(root),
	} {
		if _, err := os.Stat(s.Path("/")); err == nil {
			d.subsystems = append(d.subsystems, s)
		}
	}
	if len(d.subsystems) == 0 {
		return nil, fieldError("MountRoot", fmt.Sprintf("%q", root), "no cgroup v1 cpu, cpuacct, memory or pids controller mounted there")
	}
	d.others = d.otherHierarchies()
	return d, nil
}

// otherHierarchies are the directories under root (each a mounted
// hierarchy) that none of the managed subsystems lives in; symlinks
// (cpu -> cpu,cpuacct) are aliases of others.
func (d *v1Driver) otherHierarchies() []string {
	entries, _ := os.ReadDir(d.root)
	var out []string
	for _, e := range entries {
		dir := filepath.Join(d.root, e.Name())
		if !e.IsDir() || slices.ContainsFunc(d.subsystems, func(s cgroup1.Subsystem) bool {
			return filepath.Clean(s.(v1Pather).Path("/")) == dir
		}) {
			continue
		}
		out = append(out, dir)
	}
	return out
}

// allDirs are path's directories in every hierarchy, managed or not.
func (d *v1Driver) allDirs(path string) []string {
	out := d.dirs(path)
	for _, h := range d.others {
		out = append(out, filepath.Join(h, path))
	}
	return out
}

func (d *v1Driver) opts() []cgroup1.InitOpts {
	return []cgroup1.InitOpts{
		cgroup1.WithHierarchy(func() ([]cgroup1.Subsystem, error) { return d.subsystems, nil }),
		func(c *cgroup1.InitConfig) error { c.InitCheck = cgroup1.AllowAny; return nil },
	}
}

func (d *v1Driver) dirs(path string) []string {
	out := make([]string, 0, len(d.subsystems))
	for _, s := range d.subsystems {
		out = append(out, s.(v1Pather).Path(path))
	}
	return out
}

func v1Spec(rc *ResourceConfig) *specs.LinuxResources {
	spec := &specs.LinuxResources{CPU: &specs.LinuxCPU{
		Shares: rc.CPUShares, Quota: rc.CPUQuota, Period: rc.CPUPeriod,
	}}
	if rc.Memory != nil {
		spec.Memory = &specs.LinuxMemory{Limit: rc.Memory}
	}
	if rc.PidsLimit != nil && *rc.PidsLimit > 0 {
		spec.Pids = &specs.LinuxPids{Limit: rc.PidsLimit}
	}
	return spec
}

func (d *v1Driver) create(path string, rc *ResourceConfig) error {
	if d.mkdirHook != nil {
		for _, dir := range d.dirs(path) {
			if err := d.mkdirAll(dir); err != nil {
				return err
			}
		}
	}
	if _, err := cgroup1.New(cgroup1.StaticPath(path), v1Spec(rc), d.opts()...); err != nil {
		return fmt.Errorf("cgroupmgr: creating cgroup %q: %w", path, err)
	}
	return d.unlimitPids(path, rc)
}

func (d *v1Driver) mkdirAll(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := d.mkdirAll(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
		return err
	}
	return d.mkdirHook(dir)
}

// unlimitPids writes "max" for PidsLimit -1: cgroup1 only writes positive limits.
func (d *v1Driver) unlimitPids(path string, rc *ResourceConfig) error {
	if rc.PidsLimit == nil || *rc.PidsLimit > 0 {
		return nil
	}
	for _, s := range d.subsystems {
		if s.Name() == cgroup1.Pids {
			f := filepath.Join(s.(v1Pather).Path(path), "pids.max")
			if err := os.WriteFile(f, []byte("max"), 0o644); err != nil {
				return fmt.Errorf("cgroupmgr: writing %s: %w", f, err)
			}
		}
	}
	return nil
}

func (d *v1Driver) update(path string, rc *ResourceConfig) error {
	cg, err := cgroup1.Load(cgroup1.StaticPath(path), d.opts()...)
	if err != nil {
		return fmt.Errorf("cgroupmgr: loading cgroup %q: %w", path, err)
	}
	if err := cg.Update(v1Spec(rc)); err != nil {
		return fmt.Errorf("cgroupmgr: updating cgroup %q: %w", path, err)
	}
	return d.unlimitPids(path, rc)
}

func (d *v1Driver) exists(path string) bool {
	for _, dir := range d.allDirs(path) {
		if _, err := os.Stat(dir); err == nil {
			return true
		}
	}
	return false
}

func (d *v1Driver) pids(path string) ([]int, error) {
	cg, err := cgroup1.Load(cgroup1.StaticPath(path), d.opts()...)
	if errors.Is(err, cgroup1.ErrCgroupDeleted) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cgroupmgr: loading cgroup %q: %w", path, err)
	}
	var out []int
	for _, s := range cg.Subsystems() {
		procs, err := cg.Processes(s.Name(), true)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("cgroupmgr: listing processes of %q (%s): %w", path, s.Name(), err)
		}
		for _, p := range procs {
			if !slices.Contains(out, p.Pid) {
				out = append(out, p.Pid)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

func (d *v1Driver) destroy(path string) error {
	pids, err := d.pids(path)
	if err != nil {
		return err
	}
	if len(pids) > 0 {
		return &BusyError{Path: path, PIDs: pids}
	}
	cg, err := cgroup1.Load(cgroup1.StaticPath(path), d.opts()...)
	switch {
	case errors.Is(err, cgroup1.ErrCgroupDeleted):
	case err != nil:
		return fmt.Errorf("cgroupmgr: loading cgroup %q: %w", path, err)
	default:
		if err := cg.Delete(); err != nil {
			return fmt.Errorf("cgroupmgr: removing cgroup %q: %w", path, err)
		}
	}
	for _, h := range d.others {
		if err := os.Remove(filepath.Join(h, path)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("cgroupmgr: removing cgroup %q: %w", path, err)
		}
	}
	// cgroup1.Delete skips a controller whose directory it cannot read: make
	// sure nothing is left behind.
	for _, dir := range d.allDirs(path) {
		if _, err := os.Stat(dir); err == nil {
			return fmt.Errorf("cgroupmgr: removing cgroup %q: %s still exists", path, dir)
		}
	}
	return nil
}

func (d *v1Driver) children(path string) ([]string, error) {
	var out []string
	for _, dir := range d.allDirs(path) {
		entries, err := os.ReadDir(dir)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cgroupmgr: listing %s: %w", dir, err)
		}
		for _, e := range entries {
			if e.IsDir() && !slices.Contains(out, e.Name()) {
				out = append(out, e.Name())
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

func (d *v1Driver) usage(path string) (*Usage, error) {
	cg, err := cgroup1.Load(cgroup1.StaticPath(path), d.opts()...)
	if err != nil {
		return nil, fmt.Errorf("cgroupmgr: loading cgroup %q: %w", path, err)
	}
	m, err := cg.Stat(cgroup1.IgnoreNotExist)
	if err != nil {
		return nil, fmt.Errorf("cgroupmgr: reading stats of %q: %w", path, err)
	}
	u := &Usage{}
	if m.Memory != nil && m.Memory.Usage != nil {
		u.MemoryUsageBytes = m.Memory.Usage.Usage
		u.MemoryWorkingSetBytes = workingSet(m.Memory.Usage.Usage, m.Memory.TotalInactiveFile)
	}
	if m.CPU != nil && m.CPU.Usage != nil {
		u.CPUUsageNanoseconds = m.CPU.Usage.Total
	}
	if m.Pids != nil {
		u.PidsCurrent = m.Pids.Current
	}
	return u, nil
}
