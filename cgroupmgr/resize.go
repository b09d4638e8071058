package cgroupmgr

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// cgroupLimits are a cgroup's CFS quota and period and memory limit, -1
// for none.
type cgroupLimits struct {
	cpuQuota, memory int64
	cpuPeriod        uint64
}

// ResizePodCgroup sets the pod's cgroup to pod's resources for an
// in-place resize, as the kubelet orders it around its containers'
// resize: with grow, before them, a limit (CFS quota, memory) that would
// go down is kept where it is, so that no container's new limit exceeds
// its pod's meanwhile; without, after them, to exactly pod's. A missing
// cgroup is created. It returns the cgroup's name, as EnsurePodCgroup.
func (m *Manager) ResizePodCgroup(pod *v1.Pod, grow bool) (CgroupName, error) {
	name, err := m.PodCgroupName(pod)
	if err != nil {
		return nil, err
	}
	rc, err := m.PodResourceConfig(pod)
	if err != nil {
		return nil, err
	}
	p := m.Path(name)
	if r, ok := m.fs.(limitsReader); ok && grow && m.fs.exists(p) {
		cur, err := r.limits(p)
		if err != nil {
			return nil, err
		}
		keepHigher(rc, cur)
	}
	return name, m.ensure(name, rc)
}

// keepHigher raises rc's limits to cur's where cur's are higher (-1, no
// limit, is the highest).
func keepHigher(rc *ResourceConfig, cur cgroupLimits) {
	if rc.Memory != nil && *rc.Memory != -1 && (cur.memory == -1 || cur.memory > *rc.Memory) {
		v := cur.memory
		rc.Memory = &v
	}
	if rc.CPUQuota == nil || *rc.CPUQuota == -1 {
		return
	}
	period := uint64(100000)
	if rc.CPUPeriod != nil {
		period = *rc.CPUPeriod
	}
	switch {
	case cur.cpuQuota == -1:
		v := int64(-1)
		rc.CPUQuota = &v
	case cur.cpuPeriod > 0 && float64(cur.cpuQuota)/float64(cur.cpuPeriod) > float64(*rc.CPUQuota)/float64(period):
		v := int64(math.Ceil(float64(cur.cpuQuota) * float64(period) / float64(cur.cpuPeriod)))
		rc.CPUQuota = &v
	}
}

// limitsReader is a driver that can read a cgroup's limits back (the
// real ones; without, a resize sets the target at once).
type limitsReader interface {
	limits(path string) (cgroupLimits, error)
}

func (d *v1Driver) limits(path string) (cgroupLimits, error) {
	out := cgroupLimits{cpuQuota: -1, memory: -1}
	for _, s := range d.subsystems {
		dir := s.(v1Pather).Path(path)
		switch s.Name() {
		case "cpu":
			q, err := readInt(filepath.Join(dir, "cpu.cfs_quota_us"))
			if err != nil {
				return out, err
			}
			p, err := readInt(filepath.Join(dir, "cpu.cfs_period_us"))
			if err != nil {
				return out, err
			}
			out.cpuQuota, out.cpuPeriod = q, uint64(p)
		case "memory":
			mem, err := readInt(filepath.Join(dir, "memory.limit_in_bytes"))
			if err != nil {
				return out, err
			}
			// v1's "unlimited" is the largest page-aligned int64.
			if mem < math.MaxInt64/2 {
				out.memory = mem
			}
		}
	}
	return out, nil
}

func (d *v2Driver) limits(path string) (cgroupLimits, error) {
	out := cgroupLimits{cpuQuota: -1, memory: -1}
	b, err := os.ReadFile(filepath.Join(d.root, path, "cpu.max"))
	if err != nil {
		return out, fmt.Errorf("cgroupmgr: %w", err)
	}
	if f := strings.Fields(string(b)); len(f) == 2 {
		if f[0] != "max" {
			if out.cpuQuota, err = strconv.ParseInt(f[0], 10, 64); err != nil {
				return out, fmt.Errorf("cgroupmgr: cpu.max of %s: %w", path, err)
			}
		}
		p, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return out, fmt.Errorf("cgroupmgr: cpu.max of %s: %w", path, err)
		}
		out.cpuPeriod = p
	}
	mem, err := os.ReadFile(filepath.Join(d.root, path, "memory.max"))
	if err != nil {
		return out, fmt.Errorf("cgroupmgr: %w", err)
	}
	if s := strings.TrimSpace(string(mem)); s != "max" {
		if out.memory, err = strconv.ParseInt(s, 10, 64); err != nil {
			return out, fmt.Errorf("cgroupmgr: memory.max of %s: %w", path, err)
		}
	}
	return out, nil
}

func readInt(file string) (int64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, fmt.Errorf("cgroupmgr: %w", err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cgroupmgr: %s: %w", file, err)
	}
	return v, nil
}
