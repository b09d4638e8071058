package cgroupmgr

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/containerd/cgroups/v3/cgroup2"
)

// v2Driver manages a cgroup v2 (unified) hierarchy mounted at root through
// containerd's cgroup2: cpu.weight, cpu.max, memory.max, memory.min, pids.max.
type v2Driver struct {
	root    string
	formula WeightFormula
	// mkdirHook, when set (tests), is called for each directory this driver
	// creates, so a fake tree can grow the files the kernel would.
	mkdirHook func(dir string) error
}

func (d *v2Driver) resources(rc *ResourceConfig) *cgroup2.Resources {
	res := &cgroup2.Resources{}
	cpu := &cgroup2.CPU{}
	if rc.CPUShares != nil {
		w := CPUSharesToWeight(*rc.CPUShares, d.formula)
		cpu.Weight = &w
	}
	if rc.CPUQuota != nil || rc.CPUPeriod != nil {
		var quota *int64
		if rc.CPUQuota != nil && *rc.CPUQuota > 0 {
			quota = rc.CPUQuota
		}
		cpu.Max = cgroup2.NewCPUMax(quota, rc.CPUPeriod)
	}
	if cpu.Weight != nil || cpu.Max != "" {
		res.CPU = cpu
	}
	if (rc.Memory != nil && *rc.Memory > 0) || rc.MemoryMin != nil {
		res.Memory = &cgroup2.Memory{}
		if rc.Memory != nil && *rc.Memory > 0 {
			res.Memory.Max = rc.Memory
		}
		res.Memory.Min = rc.MemoryMin
	}
	if rc.PidsLimit != nil {
		res.Pids = &cgroup2.Pids{Max: *rc.PidsLimit}
	}
	return res
}

// unlimitMemory writes "max": cgroup2 would write "-1", which the kernel refuses.
func (d *v2Driver) unlimitMemory(path string, rc *ResourceConfig) error {
	if rc.Memory == nil || *rc.Memory > 0 {
		return nil
	}
	f := filepath.Join(d.root, path, "memory.max")
	if err := os.WriteFile(f, []byte("max"), 0o644); err != nil {
		return fmt.Errorf("cgroupmgr: writing %s: %w", f, err)
	}
	return nil
}

func (d *v2Driver) create(path string, rc *ResourceConfig) error {
	if d.mkdirHook != nil {
		if err := d.mkdirAll(filepath.Join(d.root, path)); err != nil {
			return err
		}
	}
	if _, err := cgroup2.NewManager(d.root, path, d.resources(rc)); err != nil {
		return fmt.Errorf("cgroupmgr: creating cgroup %q: %w", path, err)
	}
	return d.unlimitMemory(path, rc)
}

func (d *v2Driver) mkdirAll(dir string) error {
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

func (d *v2Driver) load(path string) (*cgroup2.Manager, error) {
	m, err := cgroup2.Load(path, cgroup2.WithMountpoint(d.root))
	if err != nil {
		return nil, fmt.Errorf("cgroupmgr: loading cgroup %q: %w", path, err)
	}
	return m, nil
}

func (d *v2Driver) update(path string, rc *ResourceConfig) error {
	m, err := d.load(path)
	if err != nil {
		return err
	}
	if err := m.Update(d.resources(rc)); err != nil {
		return fmt.Errorf("cgroupmgr: updating cgroup %q: %w", path, err)
	}
	return d.unlimitMemory(path, rc)
}

func (d *v2Driver) exists(path string) bool {
	_, err := os.Stat(filepath.Join(d.root, path))
	return err == nil
}

func (d *v2Driver) pids(path string) ([]int, error) {
	if !d.exists(path) {
		return nil, nil
	}
	m, err := d.load(path)
	if err != nil {
		return nil, err
	}
	procs, err := m.Procs(true)
	if err != nil {
		return nil, fmt.Errorf("cgroupmgr: listing processes of %q: %w", path, err)
	}
	out := make([]int, 0, len(procs))
	for _, p := range procs {
		if !slices.Contains(out, int(p)) {
			out = append(out, int(p))
		}
	}
	slices.Sort(out)
	return out, nil
}

func (d *v2Driver) destroy(path string) error {
	pids, err := d.pids(path)
	if err != nil {
		return err
	}
	if len(pids) > 0 {
		return &BusyError{Path: path, PIDs: pids}
	}
	if !d.exists(path) {
		return nil
	}
	m, err := d.load(path)
	if err != nil {
		return err
	}
	if err := m.Delete(); err != nil {
		return fmt.Errorf("cgroupmgr: removing cgroup %q: %w", path, err)
	}
	return nil
}

func (d *v2Driver) children(path string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(d.root, path))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cgroupmgr: listing cgroup %q: %w", path, err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

func (d *v2Driver) usage(path string) (*Usage, error) {
	if !d.exists(path) {
		return nil, fmt.Errorf("cgroupmgr: cgroup %q: %w", path, os.ErrNotExist)
	}
	m, err := d.load(path)
	if err != nil {
		return nil, err
	}
	s, err := m.StatFiltered(cgroup2.StatPids | cgroup2.StatCPU | cgroup2.StatMemory)
	if err != nil {
		return nil, fmt.Errorf("cgroupmgr: reading stats of %q: %w", path, err)
	}
	u := &Usage{}
	if s.Memory != nil {
		u.MemoryUsageBytes = s.Memory.Usage
		u.MemoryWorkingSetBytes = workingSet(s.Memory.Usage, s.Memory.InactiveFile)
	}
	if s.CPU != nil {
		u.CPUUsageNanoseconds = s.CPU.UsageUsec * 1000
	}
	if s.Pids != nil {
		u.PidsCurrent = s.Pids.Current
	}
	return u, nil
}
