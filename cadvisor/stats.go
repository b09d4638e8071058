package cadvisor

import (
	"bytes"
	"os"
	"path/filepath"
	"time"
)

// Stats is one cgroup's figures at one housekeeping, in cAdvisor's units
// (nanoseconds, bytes, counts).
type Stats struct {
	Timestamp time.Time
	CPU       CPUStats
	Memory    MemoryStats
	DiskIO    []DiskIOStats
	Network   []InterfaceStats // sandboxes and "/" only, as cAdvisor
	// Filesystems are the host's block-device filesystems, for "/" only:
	// with containerd cAdvisor measures no container's filesystem.
	Filesystems []FsStats
	Processes   ProcessStats
	OOMEvents   uint64
	// Pressure is the cgroup's PSI (cgroup v2 with PSI on): cumulative
	// stall times; nil without it.
	Pressure *PressureStats
}

// PressureStats are PSI's cumulative totals, in microseconds: "some"
// (some task waited) and "full" (no task could run) per resource.
type PressureStats struct {
	CPUSome, CPUFull, MemorySome, MemoryFull, IOSome, IOFull uint64
}

// CPUStats are cumulative.
type CPUStats struct {
	UsageNanoseconds, UserNanoseconds, SystemNanoseconds uint64
	Periods, ThrottledPeriods, ThrottledNanoseconds      uint64
	BurstPeriods, BurstNanoseconds                       uint64
}

// MemoryStats map cgroup v1's hierarchical (total_*) and v2's memory.stat
// keys as cAdvisor does: Cache is file, RSS anon, working set usage minus
// inactive file (floored at 0).
type MemoryStats struct {
	Usage, MaxUsage, Failcnt, Cache, RSS, Swap, MappedFile, KernelUsage uint64
	WorkingSet, ActiveFile, InactiveFile                                uint64
	Pgfault, Pgmajfault, HierarchicalPgfault, HierarchicalPgmajfault    uint64
	EventsHigh, EventsMax, FileDirty, FileWriteback                     uint64
	Pgscan, Pgsteal, WorkingsetRefaultFile, WorkingsetRefaultAnon       uint64
}

// DiskIOStats are one block device's cumulative I/O.
type DiskIOStats struct {
	Major, Minor                         uint64
	Device                               string // "/dev/sda", "" when unknown
	ReadBytes, WriteBytes, Reads, Writes uint64
}

// InterfaceStats are one network interface's cumulative counters.
type InterfaceStats struct {
	Name                                    string
	RxBytes, RxPackets, RxErrors, RxDropped uint64
	TxBytes, TxPackets, TxErrors, TxDropped uint64
}

// ProcessStats count the processes of the cgroup itself (not its
// children, as cgroup.procs lists them), their open files and sockets.
type ProcessStats struct {
	Processes, Threads, ThreadsMax, FileDescriptors, Sockets uint64
	OpenFilesSoftLimit                                       int64 // the container's first process'; -1 unlimited
	HasLimits                                                bool
}

// Spec is what a cgroup is given.
type Spec struct {
	CPUPeriod, CPUQuota, CPUShares                  uint64 // quota 0: none
	MemoryLimit, MemorySwapLimit, MemoryReservation uint64 // ^0 or near: unlimited
	HasCPU, HasMemory                               bool
}

// hierarchy finds a controller's directory for a cgroup: one tree on
// cgroup v2, one per controller on v1 (hybrid hosts too, as cgroupmgr).
type hierarchy struct {
	v2                                bool
	unified                           string
	cpu, cpuacct, memory, blkio, pids string
}

func newHierarchy(mountRoot string, v2 bool) hierarchy {
	if v2 {
		return hierarchy{v2: true, unified: mountRoot}
	}
	ctrl := func(names ...string) string {
		for _, n := range names {
			if _, err := os.Stat(filepath.Join(mountRoot, n)); err == nil {
				return filepath.Join(mountRoot, n)
			}
		}
		return filepath.Join(mountRoot, names[0])
	}
	return hierarchy{cpu: ctrl("cpu", "cpu,cpuacct"), cpuacct: ctrl("cpuacct", "cpu,cpuacct"),
		memory: ctrl("memory"), blkio: ctrl("blkio"), pids: ctrl("pids")}
}

// dir is the cgroup's directory in the tree that holds memory: the one
// listed for children and read for processes.
func (h hierarchy) dir(cgroup string) string {
	if h.v2 {
		return h.unified + cgroup
	}
	return h.memory + cgroup
}

// clockTicks is USER_HZ, which v1's cpuacct.stat counts in: 100 on
// every Linux architecture Kubernetes runs on (libcontainer assumes it).
const clockTicks = 100

// readStats fills s from the cgroup's files. A missing controller file
// leaves its figures zero: a cgroup being removed, or a controller the
// host lacks.
func (h hierarchy) readStats(r *fileReader, cgroup string, s *Stats) error {
	if h.v2 {
		return h.readV2(r, h.unified+cgroup, s)
	}
	return h.readV1(r, cgroup, s)
}

func (h hierarchy) readV1(r *fileReader, cgroup string, s *Stats) error {
	cpuacct, cpu, mem := h.cpuacct+cgroup, h.cpu+cgroup, h.memory+cgroup
	var err error
	if s.CPU.UsageNanoseconds, err = r.uint(cpuacct + "/cpuacct.usage"); err != nil {
		return err // the cgroup is gone
	}
	if b, err := r.read(cpuacct + "/cpuacct.stat"); err == nil {
		forEachKeyValue(b, func(k, v []byte) {
			switch string(k) {
			case "user":
				s.CPU.UserNanoseconds = parseUint(v) * (uint64(time.Second) / clockTicks)
			case "system":
				s.CPU.SystemNanoseconds = parseUint(v) * (uint64(time.Second) / clockTicks)
			}
		})
	}
	if b, err := r.read(cpu + "/cpu.stat"); err == nil {
		forEachKeyValue(b, func(k, v []byte) {
			switch string(k) {
			case "nr_periods":
				s.CPU.Periods = parseUint(v)
			case "nr_throttled":
				s.CPU.ThrottledPeriods = parseUint(v)
			case "throttled_time":
				s.CPU.ThrottledNanoseconds = parseUint(v)
			case "nr_bursts":
				s.CPU.BurstPeriods = parseUint(v)
			case "burst_time":
				s.CPU.BurstNanoseconds = parseUint(v)
			}
		})
	}
	m := &s.Memory
	m.Usage, _ = r.uint(mem + "/memory.usage_in_bytes")
	m.MaxUsage, _ = r.uint(mem + "/memory.max_usage_in_bytes")
	m.Failcnt, _ = r.uint(mem + "/memory.failcnt")
	m.KernelUsage, _ = r.uint(mem + "/memory.kmem.usage_in_bytes")
	if b, err := r.read(mem + "/memory.stat"); err == nil {
		forEachKeyValue(b, func(k, v []byte) { m.setV1(string(k), parseUint(v)) })
	}
	m.WorkingSet = workingSet(m.Usage, m.InactiveFile)
	s.DiskIO = readBlkioV1(r, h.blkio+cgroup, s.DiskIO[:0])
	s.Processes.Threads, _ = r.uint(h.pids + cgroup + "/pids.current")
	s.Processes.ThreadsMax, _ = r.uint(h.pids + cgroup + "/pids.max")
	return nil
}

// setV1 takes memory.stat's hierarchical totals, as cAdvisor does with
// use_hierarchy (always on since Linux 5.x).
func (m *MemoryStats) setV1(k string, v uint64) {
	switch k {
	case "total_cache":
		m.Cache = v
	case "total_rss":
		m.RSS = v
	case "total_swap":
		m.Swap = v
	case "total_mapped_file":
		m.MappedFile = v
	case "total_inactive_file":
		m.InactiveFile = v
	case "total_active_file":
		m.ActiveFile = v
	case "pgfault":
		m.Pgfault = v
	case "pgmajfault":
		m.Pgmajfault = v
	case "total_pgfault":
		m.HierarchicalPgfault = v
	case "total_pgmajfault":
		m.HierarchicalPgmajfault = v
	case "total_dirty":
		m.FileDirty = v
	case "total_writeback":
		m.FileWriteback = v
	}
}

func (h hierarchy) readV2(r *fileReader, dir string, s *Stats) error {
	b, err := r.read(dir + "/cpu.stat")
	if err != nil {
		return err // the cgroup is gone
	}
	forEachKeyValue(b, func(k, v []byte) {
		switch string(k) {
		case "usage_usec":
			s.CPU.UsageNanoseconds = parseUint(v) * 1000
		case "user_usec":
			s.CPU.UserNanoseconds = parseUint(v) * 1000
		case "system_usec":
			s.CPU.SystemNanoseconds = parseUint(v) * 1000
		case "nr_periods":
			s.CPU.Periods = parseUint(v)
		case "nr_throttled":
			s.CPU.ThrottledPeriods = parseUint(v)
		case "throttled_usec":
			s.CPU.ThrottledNanoseconds = parseUint(v) * 1000
		case "nr_bursts":
			s.CPU.BurstPeriods = parseUint(v)
		case "burst_usec":
			s.CPU.BurstNanoseconds = parseUint(v) * 1000
		}
	})
	m := &s.Memory
	m.Usage, _ = r.uint(dir + "/memory.current")
	m.MaxUsage, _ = r.uint(dir + "/memory.peak")
	m.Swap, _ = r.uint(dir + "/memory.swap.current")
	if b, err := r.read(dir + "/memory.events"); err == nil {
		forEachKeyValue(b, func(k, v []byte) {
			switch string(k) {
			case "high":
				m.EventsHigh = parseUint(v)
			case "max":
				m.EventsMax, m.Failcnt = parseUint(v), parseUint(v)
			}
		})
	}
	if b, err := r.read(dir + "/memory.stat"); err == nil {
		forEachKeyValue(b, func(k, v []byte) { m.setV2(string(k), parseUint(v)) })
	}
	m.WorkingSet = workingSet(m.Usage, m.InactiveFile)
	s.DiskIO = readIOStatV2(r, dir, s.DiskIO[:0])
	s.Pressure = readPressure(r, dir)
	s.Processes.Threads, _ = r.uint(dir + "/pids.current")
	s.Processes.ThreadsMax, _ = r.uint(dir + "/pids.max")
	return nil
}

func (m *MemoryStats) setV2(k string, v uint64) {
	switch k {
	case "file":
		m.Cache = v
	case "anon":
		m.RSS = v
	case "file_mapped":
		m.MappedFile = v
	case "inactive_file":
		m.InactiveFile = v
	case "active_file":
		m.ActiveFile = v
	case "pgfault":
		m.Pgfault, m.HierarchicalPgfault = v, v
	case "pgmajfault":
		m.Pgmajfault, m.HierarchicalPgmajfault = v, v
	case "file_dirty":
		m.FileDirty = v
	case "file_writeback":
		m.FileWriteback = v
	case "pgscan":
		m.Pgscan = v
	case "pgsteal":
		m.Pgsteal = v
	case "workingset_refault_file":
		m.WorkingsetRefaultFile = v
	case "workingset_refault_anon":
		m.WorkingsetRefaultAnon = v
	}
}

func workingSet(usage, inactiveFile uint64) uint64 {
	if inactiveFile > usage {
		return 0
	}
	return usage - inactiveFile
}

// readBlkioV1 reads blkio.throttle.io_service_bytes_recursive and
// io_serviced_recursive ("8:0 Read 4096" lines), what libcontainer falls
// back to without CFQ/BFQ statistics (every multi-queue kernel).
func readBlkioV1(r *fileReader, dir string, out []DiskIOStats) []DiskIOStats {
	for _, f := range []struct {
		name        string
		read, write func(*DiskIOStats) *uint64
	}{
		{"/blkio.throttle.io_service_bytes_recursive", func(d *DiskIOStats) *uint64 { return &d.ReadBytes }, func(d *DiskIOStats) *uint64 { return &d.WriteBytes }},
		{"/blkio.throttle.io_serviced_recursive", func(d *DiskIOStats) *uint64 { return &d.Reads }, func(d *DiskIOStats) *uint64 { return &d.Writes }},
	} {
		b, err := r.read(dir + f.name)
		if err != nil {
			continue
		}
		for _, line := range bytes.Split(b, []byte{'\n'}) {
			fields := bytes.Fields(line)
			if len(fields) != 3 {
				continue
			}
			major, minor, ok := parseDevice(fields[0])
			if !ok {
				continue
			}
			var d *DiskIOStats
			out, d = device(out, major, minor)
			switch string(fields[1]) {
			case "Read":
				*f.read(d) = parseUint(fields[2])
			case "Write":
				*f.write(d) = parseUint(fields[2])
			}
		}
	}
	return out
}

// readIOStatV2 reads io.stat ("8:0 rbytes=1 wbytes=2 rios=3 wios=4 ...").
func readIOStatV2(r *fileReader, dir string, out []DiskIOStats) []DiskIOStats {
	b, err := r.read(dir + "/io.stat")
	if err != nil {
		return out
	}
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		fields := bytes.Fields(line)
		if len(fields) < 2 {
			continue
		}
		major, minor, ok := parseDevice(fields[0])
		if !ok {
			continue
		}
		var d *DiskIOStats
		out, d = device(out, major, minor)
		for _, kv := range fields[1:] {
			k, v, _ := bytes.Cut(kv, []byte{'='})
			switch string(k) {
			case "rbytes":
				d.ReadBytes = parseUint(v)
			case "wbytes":
				d.WriteBytes = parseUint(v)
			case "rios":
				d.Reads = parseUint(v)
			case "wios":
				d.Writes = parseUint(v)
			}
		}
	}
	return out
}

func parseDevice(b []byte) (major, minor uint64, ok bool) {
	ma, mi, ok := bytes.Cut(b, []byte{':'})
	if !ok || len(ma) == 0 || len(mi) == 0 {
		return 0, 0, false
	}
	return parseUint(ma), parseUint(mi), true
}

func device(out []DiskIOStats, major, minor uint64) ([]DiskIOStats, *DiskIOStats) {
	for i := range out {
		if out[i].Major == major && out[i].Minor == minor {
			return out, &out[i]
		}
	}
	out = append(out, DiskIOStats{Major: major, Minor: minor})
	return out, &out[len(out)-1]
}

// readSpec reads what the cgroup is given, as cAdvisor's GetSpec.
func (h hierarchy) readSpec(r *fileReader, cgroup string) Spec {
	var s Spec
	if h.v2 {
		dir := h.unified + cgroup
		if w, err := r.uint(dir + "/cpu.weight"); err == nil {
			s.HasCPU = true
			if w >= 1 && w <= 10000 {
				s.CPUShares = 2 + ((w-1)*262142)/9999
			}
			if b, err := r.read(dir + "/cpu.max"); err == nil {
				q, p, _ := bytes.Cut(bytes.TrimSpace(b), []byte{' '})
				if string(q) != "max" {
					s.CPUQuota = parseUint(q)
				}
				s.CPUPeriod = parseUint(p)
			}
		}
		if lim, err := r.uint(dir + "/memory.max"); err == nil {
			s.HasMemory, s.MemoryLimit = true, lim
			s.MemoryReservation, _ = r.uint(dir + "/memory.min")
			s.MemorySwapLimit, _ = r.uint(dir + "/memory.swap.max")
		}
		return s
	}
	cpu, mem := h.cpu+cgroup, h.memory+cgroup
	if shares, err := r.uint(cpu + "/cpu.shares"); err == nil {
		s.HasCPU, s.CPUShares = true, shares
		s.CPUPeriod, _ = r.uint(cpu + "/cpu.cfs_period_us")
		if q, err := r.uint(cpu + "/cpu.cfs_quota_us"); err == nil && q != ^uint64(0) {
			s.CPUQuota = q
		}
	}
	if lim, err := r.uint(mem + "/memory.limit_in_bytes"); err == nil {
		s.HasMemory, s.MemoryLimit = true, lim
		s.MemorySwapLimit, _ = r.uint(mem + "/memory.memsw.limit_in_bytes")
		s.MemoryReservation, _ = r.uint(mem + "/memory.soft_limit_in_bytes")
	}
	return s
}

// readPressure reads cpu.pressure, memory.pressure and io.pressure
// ("some avg10=0.00 avg60=0.00 avg300=0.00 total=123"); nil when the
// cgroup has none (PSI off, or cgroup v1).
func readPressure(r *fileReader, dir string) *PressureStats {
	var p PressureStats
	found := false
	for _, f := range []struct {
		file       string
		some, full *uint64
	}{{"/cpu.pressure", &p.CPUSome, &p.CPUFull}, {"/memory.pressure", &p.MemorySome, &p.MemoryFull}, {"/io.pressure", &p.IOSome, &p.IOFull}} {
		b, err := r.read(dir + f.file)
		if err != nil {
			continue
		}
		found = true
		forEachKeyValue(b, func(k, v []byte) {
			_, total, ok := bytes.Cut(v, []byte("total="))
			switch {
			case !ok:
			case string(k) == "some":
				*f.some = parseUint(total)
			case string(k) == "full":
				*f.full = parseUint(total)
			}
		})
	}
	if !found {
		return nil
	}
	return &p
}
