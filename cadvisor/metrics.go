package cadvisor

import (
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// baseLabels are the kubelet's cAdvisor labels (containerPrometheusLabelsFunc),
// sorted as a metric's label pairs must be.
var baseLabels = []string{"container", "id", "image", "name", "namespace", "pod"}

// metricDef is one of cAdvisor's container metrics: its name, help text,
// type and extra labels as in cAdvisor's metrics/prometheus.go (the sets
// the kubelet enables), and how to read it from an entry.
type metricDef struct {
	name, help string
	counter    bool
	extra      []string
	quotaOnly  bool // cAdvisor's condition: Spec.Cpu.Quota != 0
	spec       bool // a spec metric: no timestamp
	values     func(e *entry, emit func(v float64, extra ...string))
	desc       *prometheus.Desc
}

func ns(v uint64) float64 { return float64(v) / float64(time.Second) }

func one(f func(e *entry) float64) func(*entry, func(float64, ...string)) {
	return func(e *entry, emit func(float64, ...string)) { emit(f(e)) }
}

// specMetrics are cAdvisor's container_creation_time_seconds,
// _start_time_seconds and container_spec_*: a cgroup without the cpu or
// memory controller has no cpu or memory spec, and the quota only shows
// when set.
func specMetrics() []*metricDef {
	s := func(e *entry) *Spec { return &e.spec }
	specDef := func(name, help string, f func(e *entry, emit func(float64, ...string))) *metricDef {
		return &metricDef{name: name, help: help, spec: true, values: f}
	}
	return []*metricDef{
		specDef("container_creation_time_seconds", "Container creation time since unix epoch in seconds.",
			one(func(e *entry) float64 { return float64(e.created.Unix()) })),
		specDef("container_start_time_seconds", "Start time of the container since unix epoch in seconds.",
			one(func(e *entry) float64 { return float64(e.created.Unix()) })),
		specDef("container_spec_cpu_period", "CPU period of the container.", func(e *entry, emit func(float64, ...string)) {
			if s(e).HasCPU {
				emit(float64(s(e).CPUPeriod))
			}
		}),
		specDef("container_spec_cpu_quota", "CPU quota of the container.", func(e *entry, emit func(float64, ...string)) {
			if s(e).HasCPU && s(e).CPUQuota != 0 {
				emit(float64(s(e).CPUQuota))
			}
		}),
		specDef("container_spec_cpu_shares", "CPU share of the container.", func(e *entry, emit func(float64, ...string)) {
			if s(e).HasCPU {
				emit(float64(s(e).CPUShares))
			}
		}),
		specDef("container_spec_memory_limit_bytes", "Memory limit for the container.", func(e *entry, emit func(float64, ...string)) {
			if s(e).HasMemory {
				emit(specValue(s(e).MemoryLimit))
			}
		}),
		specDef("container_spec_memory_swap_limit_bytes", "Memory swap limit for the container.", func(e *entry, emit func(float64, ...string)) {
			if s(e).HasMemory {
				emit(specValue(s(e).MemorySwapLimit))
			}
		}),
		specDef("container_spec_memory_reservation_limit_bytes", "Memory reservation limit for the container.",
			func(e *entry, emit func(float64, ...string)) {
				if s(e).HasMemory {
					emit(specValue(s(e).MemoryReservation))
				}
			}),
	}
}

// statsMetrics are cAdvisor's cpu, memory, diskIO, network, process and
// OOM metrics, in its order.
func statsMetrics() []*metricDef {
	c := func(e *entry) *CPUStats { return &e.stats.CPU }
	m := func(e *entry) *MemoryStats { return &e.stats.Memory }
	defs := []*metricDef{
		{name: "container_cpu_user_seconds_total", help: "Cumulative user cpu time consumed in seconds.", counter: true,
			values: one(func(e *entry) float64 { return ns(c(e).UserNanoseconds) })},
		{name: "container_cpu_system_seconds_total", help: "Cumulative system cpu time consumed in seconds.", counter: true,
			values: one(func(e *entry) float64 { return ns(c(e).SystemNanoseconds) })},
		{name: "container_cpu_usage_seconds_total", help: "Cumulative cpu time consumed in seconds.", counter: true, extra: []string{"cpu"},
			values: func(e *entry, emit func(float64, ...string)) {
				if u := c(e).UsageNanoseconds; u > 0 { // cAdvisor leaves out a zero total
					emit(ns(u), "total")
				}
			}},
		{name: "container_cpu_cfs_periods_total", help: "Number of elapsed enforcement period intervals.", counter: true, quotaOnly: true,
			values: one(func(e *entry) float64 { return float64(c(e).Periods) })},
		{name: "container_cpu_cfs_throttled_periods_total", help: "Number of throttled period intervals.", counter: true, quotaOnly: true,
			values: one(func(e *entry) float64 { return float64(c(e).ThrottledPeriods) })},
		{name: "container_cpu_cfs_throttled_seconds_total", help: "Total time duration the container has been throttled.", counter: true, quotaOnly: true,
			values: one(func(e *entry) float64 { return ns(c(e).ThrottledNanoseconds) })},
		{name: "container_cpu_cfs_burst_periods_total", help: "Number of periods when burst occurs.", counter: true, quotaOnly: true,
			values: one(func(e *entry) float64 { return float64(c(e).BurstPeriods) })},
		{name: "container_cpu_cfs_burst_seconds_total", help: "Total time duration the container has been bursted.", counter: true, quotaOnly: true,
			values: one(func(e *entry) float64 { return ns(c(e).BurstNanoseconds) })},
	}
	gauge := func(name, help string, f func(*MemoryStats) uint64) *metricDef {
		return &metricDef{name: name, help: help, values: one(func(e *entry) float64 { return float64(f(m(e))) })}
	}
	counter := func(name, help string, f func(*MemoryStats) uint64) *metricDef {
		d := gauge(name, help, f)
		d.counter = true
		return d
	}
	defs = append(defs,
		gauge("container_memory_cache", "Number of bytes of page cache memory.", func(s *MemoryStats) uint64 { return s.Cache }),
		gauge("container_memory_rss", "Size of RSS in bytes.", func(s *MemoryStats) uint64 { return s.RSS }),
		gauge("container_memory_kernel_usage", "Size of kernel memory allocated in bytes.", func(s *MemoryStats) uint64 { return s.KernelUsage }),
		gauge("container_memory_mapped_file", "Size of memory mapped files in bytes.", func(s *MemoryStats) uint64 { return s.MappedFile }),
		gauge("container_memory_swap", "Container swap usage in bytes.", func(s *MemoryStats) uint64 { return s.Swap }),
		counter("container_memory_failcnt", "Number of memory usage hits limits", func(s *MemoryStats) uint64 { return s.Failcnt }),
		gauge("container_memory_usage_bytes", "Current memory usage in bytes, including all memory regardless of when it was accessed",
			func(s *MemoryStats) uint64 { return s.Usage }),
		gauge("container_memory_max_usage_bytes", "Maximum memory usage recorded in bytes", func(s *MemoryStats) uint64 { return s.MaxUsage }),
		gauge("container_memory_working_set_bytes", "Current working set in bytes.", func(s *MemoryStats) uint64 { return s.WorkingSet }),
		gauge("container_memory_total_active_file_bytes", "Current total active file in bytes.", func(s *MemoryStats) uint64 { return s.ActiveFile }),
		gauge("container_memory_total_inactive_file_bytes", "Current total inactive file in bytes.", func(s *MemoryStats) uint64 { return s.InactiveFile }),
		&metricDef{name: "container_memory_failures_total", help: "Cumulative count of memory allocation failures.", counter: true,
			extra: []string{"failure_type", "scope"}, values: func(e *entry, emit func(float64, ...string)) {
				s := m(e)
				emit(float64(s.Pgfault), "pgfault", "container")
				emit(float64(s.Pgmajfault), "pgmajfault", "container")
				emit(float64(s.HierarchicalPgfault), "pgfault", "hierarchy")
				emit(float64(s.HierarchicalPgmajfault), "pgmajfault", "hierarchy")
			}},
		counter("container_memory_events_high_total", "Cumulative count of memory.high throttle events for the container",
			func(s *MemoryStats) uint64 { return s.EventsHigh }),
		counter("container_memory_events_max_total", "Cumulative count of memory.max limit hit events for the container",
			func(s *MemoryStats) uint64 { return s.EventsMax }),
		gauge("container_memory_file_dirty_bytes", "Number of bytes of file cache that has been modified but not yet written back to disk.",
			func(s *MemoryStats) uint64 { return s.FileDirty }),
		gauge("container_memory_file_writeback_bytes", "Number of bytes of file cache that is currently being written back to disk.",
			func(s *MemoryStats) uint64 { return s.FileWriteback }),
		counter("container_memory_pgscan_total", "Cumulative number of pages scanned by the page reclaim algorithm.",
			func(s *MemoryStats) uint64 { return s.Pgscan }),
		counter("container_memory_pgsteal_total", "Cumulative number of pages reclaimed by the page reclaim algorithm.",
			func(s *MemoryStats) uint64 { return s.Pgsteal }),
		counter("container_memory_workingset_refault_file_total", "Cumulative number of refaults of previously evicted file pages.",
			func(s *MemoryStats) uint64 { return s.WorkingsetRefaultFile }),
		counter("container_memory_workingset_refault_anon_total", "Cumulative number of refaults of previously evicted anonymous pages.",
			func(s *MemoryStats) uint64 { return s.WorkingsetRefaultAnon }),
	)
	fs := func(name, help string, f func(*FsStats) uint64) *metricDef {
		return &metricDef{name: name, help: help, extra: []string{"device"},
			values: func(e *entry, emit func(float64, ...string)) {
				for i := range e.stats.Filesystems {
					emit(float64(f(&e.stats.Filesystems[i])), e.stats.Filesystems[i].Device)
				}
			}}
	}
	defs = append(defs,
		fs("container_fs_inodes_free", "Number of available Inodes", func(s *FsStats) uint64 { return s.InodesFree }),
		fs("container_fs_inodes_total", "Number of Inodes", func(s *FsStats) uint64 { return s.Inodes }),
		fs("container_fs_limit_bytes", "Number of bytes that can be consumed by the container on this filesystem.",
			func(s *FsStats) uint64 { return s.Limit }),
		fs("container_fs_usage_bytes", "Number of bytes that are consumed by the container on this filesystem.",
			func(s *FsStats) uint64 { return s.Usage }),
	)
	io := func(name, help string, f func(*DiskIOStats) uint64) *metricDef {
		return &metricDef{name: name, help: help, counter: true, extra: []string{"device"},
			values: func(e *entry, emit func(float64, ...string)) {
				for i := range e.stats.DiskIO {
					d := &e.stats.DiskIO[i]
					emit(float64(f(d)), d.Device)
				}
			}}
	}
	defs = append(defs,
		io("container_fs_reads_bytes_total", "Cumulative count of bytes read", func(d *DiskIOStats) uint64 { return d.ReadBytes }),
		io("container_fs_reads_total", "Cumulative count of reads completed", func(d *DiskIOStats) uint64 { return d.Reads }),
		io("container_fs_writes_bytes_total", "Cumulative count of bytes written", func(d *DiskIOStats) uint64 { return d.WriteBytes }),
		io("container_fs_writes_total", "Cumulative count of writes completed", func(d *DiskIOStats) uint64 { return d.Writes }),
	)
	net := func(name, help string, f func(*InterfaceStats) uint64) *metricDef {
		return &metricDef{name: name, help: help, counter: true, extra: []string{"interface"},
			values: func(e *entry, emit func(float64, ...string)) {
				for i := range e.stats.Network {
					n := &e.stats.Network[i]
					emit(float64(f(n)), n.Name)
				}
			}}
	}
	defs = append(defs,
		net("container_network_receive_bytes_total", "Cumulative count of bytes received", func(n *InterfaceStats) uint64 { return n.RxBytes }),
		net("container_network_receive_packets_total", "Cumulative count of packets received", func(n *InterfaceStats) uint64 { return n.RxPackets }),
		net("container_network_receive_packets_dropped_total", "Cumulative count of packets dropped while receiving",
			func(n *InterfaceStats) uint64 { return n.RxDropped }),
		net("container_network_receive_errors_total", "Cumulative count of errors encountered while receiving",
			func(n *InterfaceStats) uint64 { return n.RxErrors }),
		net("container_network_transmit_bytes_total", "Cumulative count of bytes transmitted", func(n *InterfaceStats) uint64 { return n.TxBytes }),
		net("container_network_transmit_packets_total", "Cumulative count of packets transmitted",
			func(n *InterfaceStats) uint64 { return n.TxPackets }),
		net("container_network_transmit_packets_dropped_total", "Cumulative count of packets dropped while transmitting",
			func(n *InterfaceStats) uint64 { return n.TxDropped }),
		net("container_network_transmit_errors_total", "Cumulative count of errors encountered while transmitting",
			func(n *InterfaceStats) uint64 { return n.TxErrors }),
	)
	p := func(e *entry) *ProcessStats { return &e.stats.Processes }
	defs = append(defs,
		&metricDef{name: "container_processes", help: "Number of processes running inside the container.",
			values: one(func(e *entry) float64 { return float64(p(e).Processes) })},
		&metricDef{name: "container_file_descriptors", help: "Number of open file descriptors for the container.",
			values: one(func(e *entry) float64 { return float64(p(e).FileDescriptors) })},
		&metricDef{name: "container_sockets", help: "Number of open sockets for the container.",
			values: one(func(e *entry) float64 { return float64(p(e).Sockets) })},
		&metricDef{name: "container_threads_max", help: "Maximum number of threads allowed inside the container, infinity if value is zero",
			values: one(func(e *entry) float64 { return threadsMax(p(e).ThreadsMax) })},
		&metricDef{name: "container_threads", help: "Number of threads running inside the container",
			values: one(func(e *entry) float64 { return float64(p(e).Threads) })},
		&metricDef{name: "container_ulimits_soft", help: "Soft ulimit values for the container root process. Unlimited if -1, except priority and nice",
			extra: []string{"ulimit"}, values: func(e *entry, emit func(float64, ...string)) {
				if p(e).HasLimits {
					emit(float64(p(e).OpenFilesSoftLimit), "max_open_files")
				}
			}},
		&metricDef{name: "container_oom_events_total", help: "Count of out of memory events observed for the container", counter: true,
			values: one(func(e *entry) float64 { return float64(e.stats.OOMEvents) })},
	)
	psi := func(name, help string, f func(*PressureStats) uint64) *metricDef {
		return &metricDef{name: name, help: help, counter: true, values: func(e *entry, emit func(float64, ...string)) {
			if p := e.stats.Pressure; p != nil {
				emit(float64(f(p)) / 1e6)
			}
		}}
	}
	defs = append(defs,
		psi("container_pressure_cpu_stalled_seconds_total", "Total time duration no tasks in the container could make progress due to CPU congestion.",
			func(p *PressureStats) uint64 { return p.CPUFull }),
		psi("container_pressure_cpu_waiting_seconds_total", "Total time duration tasks in the container have waited due to CPU congestion.",
			func(p *PressureStats) uint64 { return p.CPUSome }),
		psi("container_pressure_memory_stalled_seconds_total", "Total time duration no tasks in the container could make progress due to memory congestion.",
			func(p *PressureStats) uint64 { return p.MemoryFull }),
		psi("container_pressure_memory_waiting_seconds_total", "Total time duration tasks in the container have waited due to memory congestion.",
			func(p *PressureStats) uint64 { return p.MemorySome }),
		psi("container_pressure_io_stalled_seconds_total", "Total time duration no tasks in the container could make progress due to IO congestion.",
			func(p *PressureStats) uint64 { return p.IOFull }),
		psi("container_pressure_io_waiting_seconds_total", "Total time duration tasks in the container have waited due to IO congestion.",
			func(p *PressureStats) uint64 { return p.IOSome }),
	)
	return defs
}

// allMetrics are the spec and stats metrics, with their descriptors.
func allMetrics() []*metricDef {
	defs := append(specMetrics(), statsMetrics()...)
	for _, d := range defs {
		d.desc = prometheus.NewDesc(d.name, d.help, append(append([]string(nil), baseLabels...), d.extra...), nil)
	}
	return defs
}

// threadsMax is pids.max, 0 for "max" (cAdvisor: "infinity if value is zero").
func threadsMax(v uint64) float64 {
	if v == ^uint64(0) {
		return 0
	}
	return float64(v)
}

// specValue is cAdvisor's specMemoryValue: 0 for unlimited (above 2^62,
// allowing for the kernel's page rounding).
func specValue(v uint64) float64 {
	if v > 1<<62 {
		return 0
	}
	return float64(v)
}

// sample is one prebuilt series: housekeeping makes them, a scrape hands
// them to the registry as they are, so a scrape allocates nothing of its
// own per series.
type sample struct {
	def     *metricDef
	extra   []string // extra label values, in def.extra's order
	desc    *prometheus.Desc
	labels  []*dto.LabelPair
	value   float64
	counter bool
	ts      *int64 // nil: no timestamp (spec metrics, as cAdvisor's)
}

func (s *sample) Desc() *prometheus.Desc { return s.desc }

func (s *sample) Write(m *dto.Metric) error {
	m.Label, m.TimestampMs = s.labels, s.ts
	if s.counter {
		m.Counter = &dto.Counter{Value: &s.value}
	} else {
		m.Gauge = &dto.Gauge{Value: &s.value}
	}
	return nil
}

// labelPairs merges the entry's base pairs with extra names and values,
// sorted by name.
func labelPairs(base []*dto.LabelPair, names, values []string) []*dto.LabelPair {
	if len(names) == 0 {
		return base
	}
	out := make([]*dto.LabelPair, 0, len(base)+len(names))
	out = append(out, base...)
	for i, n := range names {
		out = append(out, &dto.LabelPair{Name: proto.String(n), Value: proto.String(values[i])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out
}
