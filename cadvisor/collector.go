package cadvisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

// DefaultHousekeepingInterval is the kubelet's cAdvisor housekeeping
// interval (pkg/kubelet/cadvisor: 10s).
const DefaultHousekeepingInterval = 10 * time.Second

// Runtime lists what the runtime runs; *runtime.Client implements it.
type Runtime interface {
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
}

// OOMCounter counts OOM kills by cgroup (the kernel's oom_memcg, which is
// the id label); *oomwatch.Watcher implements it.
type OOMCounter interface {
	OOMEvents(cgroup string) uint64
}

// Config says where the cgroups are and how often to read them.
type Config struct {
	Runtime Runtime
	// KubepodsCgroup is the kubepods cgroup's path in the hierarchy
	// ("/kubepods", or "/kubepods.slice" with the systemd driver):
	// cgroupmgr's Manager.Path(KubepodsCgroupName()).
	KubepodsCgroup string
	// MountRoot is where the cgroup hierarchy is mounted; default
	// /sys/fs/cgroup. CgroupV2 says whether it is the unified (v2)
	// hierarchy or v1 controllers (hybrid hosts too); nil detects it
	// there.
	MountRoot string
	CgroupV2  *bool
	// SandboxImage is the pause image, the image label of sandboxes
	// (cAdvisor has it from containerd). Optional.
	SandboxImage string
	// HousekeepingInterval is how often cgroups are read; default 10s.
	HousekeepingInterval time.Duration
	OOM                  OOMCounter // optional
	Clock                clock.WithTicker
	Log                  logr.Logger
}

// Collector serves cAdvisor's container metrics as the kubelet's
// /metrics/cadvisor does, from what its housekeeping last read.
type Collector struct {
	cfg     Config
	h       hierarchy
	defs    []*metricDef
	devices map[[2]uint64]string
	r       fileReader

	mu         sync.Mutex // guards snapshot, generation, index, exposition and failed
	snapshot   []*entry
	generation uint64            // of snapshot: housekeepings done
	index      map[string]*entry // by container ID, "pod/<UID>" and cgroup
	exposition *exposition       // snapshot's, once a scrape rendered it
	failed     bool

	// renderMu makes concurrent scrapes after a housekeeping render once.
	renderMu sync.Mutex
	renders  int // for tests
}

// entry is one cgroup's figures; its samples are made from them when
// rendered or collected, not kept.
type entry struct {
	found
	spec  Spec
	stats Stats
}

// New checks cfg and fills in the defaults.
func New(cfg Config) (*Collector, error) {
	if cfg.Runtime == nil {
		return nil, errors.New("cadvisor: Config.Runtime: Required value")
	}
	if cfg.KubepodsCgroup == "" || cfg.KubepodsCgroup[0] != '/' {
		return nil, fmt.Errorf("cadvisor: Config.KubepodsCgroup: Invalid value: %q: must be an absolute cgroup path", cfg.KubepodsCgroup)
	}
	if cfg.HousekeepingInterval < 0 {
		return nil, fmt.Errorf("cadvisor: Config.HousekeepingInterval: Invalid value: %s: must not be negative", cfg.HousekeepingInterval)
	}
	if cfg.HousekeepingInterval == 0 {
		cfg.HousekeepingInterval = DefaultHousekeepingInterval
	}
	if cfg.MountRoot == "" {
		cfg.MountRoot = "/sys/fs/cgroup"
	}
	if cfg.CgroupV2 == nil {
		v2 := unified(cfg.MountRoot)
		cfg.CgroupV2 = &v2
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Collector{cfg: cfg, h: newHierarchy(cfg.MountRoot, *cfg.CgroupV2), defs: allMetrics(),
		devices: map[[2]uint64]string{}}, nil
}

func unified(root string) bool {
	var st syscall.Statfs_t
	return syscall.Statfs(root, &st) == nil && st.Type == 0x63677270 // CGROUP2_SUPER_MAGIC
}

// Run housekeeps at once and then every HousekeepingInterval until ctx
// ends; a failed pass is logged and makes container_scrape_error 1.
func (c *Collector) Run(ctx context.Context) error {
	t := c.cfg.Clock.NewTicker(c.cfg.HousekeepingInterval)
	defer t.Stop()
	for {
		if err := c.Housekeep(ctx); err != nil && ctx.Err() == nil {
			c.cfg.Log.Error(err, "cAdvisor housekeeping failed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// Housekeep reads every cgroup now: the figures the next scrapes serve
// (the first of them renders them) and the stats lookups return. It is
// not safe to call concurrently with itself.
func (c *Collector) Housekeep(ctx context.Context) error {
	cgroups, err := c.discover(ctx)
	if err != nil {
		c.mu.Lock()
		c.failed = true
		c.mu.Unlock()
		return fmt.Errorf("listing the runtime's containers: %w", err)
	}
	now := c.cfg.Clock.Now()
	entries := make([]*entry, 0, len(cgroups))
	for _, f := range cgroups {
		e := &entry{found: f}
		if err := c.read(e, now); err != nil {
			continue // gone since it was listed
		}
		entries = append(entries, e)
	}
	index := make(map[string]*entry, 2*len(entries))
	for _, e := range entries {
		index[e.id] = e
		switch {
		case e.kind != rawCgroup:
			index[e.name] = e
		case e.podUID != "":
			index["pod/"+e.podUID] = e
		}
	}
	c.mu.Lock()
	c.snapshot, c.index, c.exposition, c.failed = entries, index, nil, false
	c.generation++
	c.mu.Unlock()
	return nil
}

// ContainerStats are a running container's figures (or a sandbox's, by
// its ID) as the last housekeeping read them.
func (c *Collector) ContainerStats(id string) (Stats, bool) { return c.lookup(id) }

// PodStats are a pod's cgroup's figures as the last housekeeping read
// them.
func (c *Collector) PodStats(uid string) (Stats, bool) { return c.lookup("pod/" + uid) }

// KubepodsStats are the kubepods cgroup's figures (all pods') as the last
// housekeeping read them.
func (c *Collector) KubepodsStats() (Stats, bool) { return c.lookup(c.cfg.KubepodsCgroup) }

func (c *Collector) lookup(key string) (Stats, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.index[key]; ok {
		return e.stats, true
	}
	return Stats{}, false
}

// read fills e's spec and stats from its cgroup (and for sandboxes and
// the root, their network namespace's interfaces).
func (c *Collector) read(e *entry, now time.Time) error {
	r := &c.r
	e.stats.Timestamp = now
	if err := c.h.readStats(r, e.id, &e.stats); err != nil {
		return err
	}
	if e.id == "/" && c.h.v2 {
		readRootMemory(r, &e.stats.Memory)
	}
	e.spec = c.h.readSpec(r, e.id)
	if st, err := os.Stat(c.h.dir(e.id)); err == nil && e.created.IsZero() {
		e.created = st.ModTime()
	}
	for i := range e.stats.DiskIO {
		d := &e.stats.DiskIO[i]
		d.Device = c.deviceName(d.Major, d.Minor)
	}
	var pids []int
	if e.id != "/" { // the root's processes are every host process
		pids = readProcesses(r, c.h.dir(e.id), e.kind != rawCgroup, &e.stats.Processes)
	}
	switch {
	case e.id == "/":
		e.stats.Network = readNetDev(r, 1, nil)
		e.stats.Filesystems = readFilesystems("/proc/1/mountinfo")
	case e.kind == sandboxCgroup && len(pids) > 0:
		e.stats.Network = readNetDev(r, pids[0], nil)
	}
	if c.cfg.OOM != nil {
		e.stats.OOMEvents = c.cfg.OOM.OOMEvents(e.id)
	}
	return nil
}

// deviceName is "/dev/<name>" of a block device, from sysfs, remembered.
func (c *Collector) deviceName(major, minor uint64) string {
	key := [2]uint64{major, minor}
	if name, ok := c.devices[key]; ok {
		return name
	}
	name := ""
	if b, err := c.r.read("/sys/dev/block/" + strconv.FormatUint(major, 10) + ":" + strconv.FormatUint(minor, 10) + "/uevent"); err == nil {
		forEachLine(b, func(line []byte) {
			if v, ok := cutPrefix(line, "DEVNAME="); ok {
				name = "/dev/" + string(v)
			}
		})
	}
	c.devices[key] = name
	return name
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.defs {
		ch <- d.desc
	}
	ch <- lastSeenDesc
	ch <- scrapeErrorDesc
}

// Collect implements prometheus.Collector: the last housekeeping's
// samples, and container_last_seen at now.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	entries, failed := c.snapshot, c.failed
	c.mu.Unlock()
	now := c.cfg.Clock.Now()
	for _, e := range entries {
		pairs, samples := c.samplesOf(e, true)
		ch <- prometheus.NewMetricWithTimestamp(now, &sample{desc: lastSeenDesc, labels: pairs, value: float64(now.Unix())})
		for i := range samples {
			ch <- &samples[i]
		}
	}
	v := 0.0
	if failed {
		v = 1
	}
	ch <- prometheus.MustNewConstMetric(scrapeErrorDesc, prometheus.GaugeValue, v)
}

var (
	lastSeenDesc = prometheus.NewDesc("container_last_seen", "Last time a container was seen by the exporter", baseLabels, nil)
	// container_scrape_error is cAdvisor's, without its const labels.
	scrapeErrorDesc = prometheus.NewDesc("container_scrape_error", "1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
)

// samplesOf builds e's series: its spec's, without timestamps, then
// each metric's at its stats' time, as cAdvisor's collectContainersInfo;
// withPairs adds the label pairs a registry needs (rendering needs only
// the extra labels' values).
func (c *Collector) samplesOf(e *entry, withPairs bool) ([]*dto.LabelPair, []sample) {
	var pairs []*dto.LabelPair
	if withPairs {
		values := [...]string{e.container, e.id, e.image, e.name, e.namespace, e.pod}
		pairs = make([]*dto.LabelPair, len(baseLabels))
		for i, n := range baseLabels {
			pairs[i] = &dto.LabelPair{Name: proto.String(n), Value: proto.String(values[i])}
		}
	}
	ts := new(int64)
	*ts = e.stats.Timestamp.UnixMilli()
	samples := make([]sample, 0, 64)
	for _, d := range c.defs {
		if d.quotaOnly && e.spec.CPUQuota == 0 {
			continue
		}
		d.values(e, func(v float64, extra ...string) {
			s := sample{def: d, extra: extra, desc: d.desc, value: v, counter: d.counter, ts: ts}
			if withPairs {
				s.labels = labelPairs(pairs, d.extra, extra)
			}
			if d.spec {
				s.ts = nil
			}
			samples = append(samples, s)
		})
	}
	return pairs, samples
}
