package cadvisor

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/cgroupmgr"
)

const (
	uid       = "1a2b3c4d-0000-4000-8000-000000000001"
	sandboxID = "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a"
	appID     = "c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0"
)

// gather housekeeps once and returns what a scrape would serve.
func gather(t *testing.T, c *Collector) []*dto.MetricFamily {
	t.Helper()
	require.NoError(t, c.Housekeep(context.Background()))
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	return mfs
}

// value finds the one series of name whose labels include want.
func value(t *testing.T, mfs []*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	t.Helper()
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range want {
				if got[k] != v {
					continue next
				}
			}
			if m.Counter != nil {
				return m.GetCounter().GetValue(), true
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

func TestCollectorReadsCgroups(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name   string
		mode   cgroupmgr.Mode
		files  map[string]string
		shares float64
	}{
		{"v1", cgroupmgr.ModeV1, v1Container(), 51},
		{"v2", cgroupmgr.ModeV2, v2Container(), 28}, // cpu.weight 2 as cAdvisor converts it
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree := cgroupTree{t: t, root: t.TempDir(), v2: tc.mode == cgroupmgr.ModeV2}
			pod := "/kubepods/burstable/pod" + uid
			for _, cg := range []string{"", "/kubepods", "/kubepods/burstable", pod, pod + "/" + sandboxID, pod + "/" + appID} {
				tree.write(cg, tc.files)
			}
			rt := &fakeRuntime{}
			rt.addPod("web", uid, sandboxID, appID)
			c, err := New(Config{Runtime: rt, KubepodsCgroup: "/kubepods", MountRoot: tree.root, CgroupV2: ptr.To(tc.mode == cgroupmgr.ModeV2),
				SandboxImage: "registry.k8s.io/pause:3.10", Clock: clocktesting.NewFakeClock(time.Unix(1.8e9, 0))})
			require.NoError(t, err)
			mfs := gather(t, c)

			app := map[string]string{"container": "app", "pod": "web", "namespace": "default", "name": appID,
				"image": "docker.io/library/busybox:1.36", "id": pod + "/" + appID}
			for name, want := range map[string]float64{
				"container_cpu_user_seconds_total":          1.5,
				"container_cpu_system_seconds_total":        1,
				"container_cpu_cfs_periods_total":           40,
				"container_cpu_cfs_throttled_periods_total": 10,
				"container_cpu_cfs_throttled_seconds_total": 0.5,
				"container_memory_working_set_bytes":        200 * mib,
				"container_memory_rss":                      200 * mib,
				"container_memory_cache":                    100 * mib,
				"container_memory_usage_bytes":              300 * mib,
				"container_memory_max_usage_bytes":          310 * mib,
				"container_memory_failcnt":                  3,
				"container_memory_mapped_file":              8192,
				"container_spec_cpu_quota":                  5000,
				"container_spec_cpu_period":                 100000,
				"container_spec_cpu_shares":                 tc.shares,
				"container_spec_memory_limit_bytes":         512 * mib,
				"container_spec_memory_swap_limit_bytes":    0, // unlimited
				"container_fs_reads_bytes_total":            4096,
				"container_fs_writes_bytes_total":           8192,
				"container_fs_reads_total":                  1,
				"container_fs_writes_total":                 2,
				"container_threads":                         3,
				"container_threads_max":                     0, // "max"
				"container_processes":                       0,
			} {
				got, ok := value(t, mfs, name, app)
				if assert.True(t, ok, "%s: no series for the container", name) {
					assert.InDelta(t, want, got, 1e-9, name)
				}
			}
			got, ok := value(t, mfs, "container_cpu_usage_seconds_total", map[string]string{"id": app["id"], "cpu": "total"})
			assert.True(t, ok)
			assert.InDelta(t, 2.5, got, 1e-9)

			_, ok = value(t, mfs, "container_memory_working_set_bytes", map[string]string{"id": pod + "/" + sandboxID,
				"name": sandboxID, "pod": "web", "container": "", "image": "registry.k8s.io/pause:3.10"})
			assert.True(t, ok, "the sandbox's series")
			_, ok = value(t, mfs, "container_memory_working_set_bytes", map[string]string{"id": pod, "pod": "web",
				"namespace": "default", "container": "", "name": "", "image": ""})
			assert.True(t, ok, "the pod cgroup's series, with its pod's name")
			for _, id := range []string{"/", "/kubepods", "/kubepods/burstable"} {
				_, ok = value(t, mfs, "container_cpu_usage_seconds_total", map[string]string{"id": id, "pod": ""})
				assert.True(t, ok, "the %s cgroup's series", id)
			}
			psi, ok := value(t, mfs, "container_pressure_cpu_waiting_seconds_total", app)
			assert.Equal(t, tc.mode == cgroupmgr.ModeV2, ok, "PSI with cgroup v2 only")
			if ok {
				assert.InDelta(t, 1.5, psi, 1e-9)
				stalled, _ := value(t, mfs, "container_pressure_cpu_stalled_seconds_total", app)
				assert.InDelta(t, 0.5, stalled, 1e-9)
			}
			_, ok = value(t, mfs, "container_network_receive_bytes_total", map[string]string{"id": app["id"]})
			assert.False(t, ok, "containers share their sandbox's network: only sandboxes report it")
			got, _ = value(t, mfs, "container_scrape_error", nil)
			assert.Zero(t, got)
		})
	}
}

func TestExpositionLints(t *testing.T) {
	tree := cgroupTree{t: t, root: t.TempDir()}
	pod := "/kubepods/besteffort/pod" + uid
	for _, cg := range []string{"", "/kubepods", "/kubepods/besteffort", pod, pod + "/" + appID} {
		tree.write(cg, v1Container())
	}
	rt := &fakeRuntime{}
	rt.addPod("web", uid, sandboxID, appID)
	c, err := New(Config{Runtime: rt, KubepodsCgroup: "/kubepods", MountRoot: tree.root, CgroupV2: ptr.To(false)})
	require.NoError(t, err)
	mfs := gather(t, c)
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	require.NoError(t, err)
	// cAdvisor's own names promlint dislikes, kept for the dashboards that
	// read them: counters without _total and gauges named like counters.
	allowed := map[string]bool{"container_memory_failcnt": true, "container_last_seen": true, "container_fs_inodes_total": true,
		"container_memory_cache": true, "container_memory_rss": true, "container_memory_swap": true,
		"container_memory_mapped_file": true, "container_memory_kernel_usage": true,
		"container_spec_cpu_period": true, "container_spec_cpu_quota": true, "container_spec_cpu_shares": true}
	for _, p := range problems {
		assert.True(t, allowed[p.Metric], "%s: %s", p.Metric, p.Text)
	}
}

func TestScrapeErrorWhenRuntimeFails(t *testing.T) {
	tree := cgroupTree{t: t, root: t.TempDir()}
	tree.write("", v1Container())
	tree.write("/kubepods", v1Container())
	rt := &fakeRuntime{}
	c, err := New(Config{Runtime: rt, KubepodsCgroup: "/kubepods", MountRoot: tree.root, CgroupV2: ptr.To(false)})
	require.NoError(t, err)
	mfs := gather(t, c)
	_, ok := value(t, mfs, "container_cpu_usage_seconds_total", map[string]string{"id": "/kubepods"})
	require.True(t, ok)

	rt.err = assert.AnError
	require.ErrorIs(t, c.Housekeep(context.Background()), assert.AnError)
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(c))
	mfs, err = reg.Gather()
	require.NoError(t, err)
	got, _ := value(t, mfs, "container_scrape_error", nil)
	assert.Equal(t, 1.0, got)
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{KubepodsCgroup: "/kubepods"}, "cadvisor: Config.Runtime: Required value"},
		{Config{Runtime: &fakeRuntime{}, KubepodsCgroup: "kubepods"}, `cadvisor: Config.KubepodsCgroup: Invalid value: "kubepods": must be an absolute cgroup path`},
		{Config{Runtime: &fakeRuntime{}, KubepodsCgroup: "/kubepods", HousekeepingInterval: -1}, "cadvisor: Config.HousekeepingInterval: Invalid value: -1ns: must not be negative"},
	} {
		_, err := New(tc.cfg)
		assert.EqualError(t, err, tc.want)
	}
}

func TestStatsLookups(t *testing.T) {
	tree := cgroupTree{t: t, root: t.TempDir(), v2: true}
	pod := "/kubepods/burstable/pod" + uid
	for _, cg := range []string{"", "/kubepods", "/kubepods/burstable", pod, pod + "/" + sandboxID, pod + "/" + appID} {
		tree.write(cg, v2Container())
	}
	rt := &fakeRuntime{}
	rt.addPod("web", uid, sandboxID, appID)
	c, err := New(Config{Runtime: rt, KubepodsCgroup: "/kubepods", MountRoot: tree.root, CgroupV2: ptr.To(true)})
	require.NoError(t, err)
	_, ok := c.ContainerStats(appID)
	assert.False(t, ok, "nothing before a housekeeping")
	require.NoError(t, c.Housekeep(context.Background()))
	for name, lookup := range map[string]func() (Stats, bool){
		"container": func() (Stats, bool) { return c.ContainerStats(appID) },
		"sandbox":   func() (Stats, bool) { return c.ContainerStats(sandboxID) },
		"pod":       func() (Stats, bool) { return c.PodStats(uid) },
		"kubepods":  c.KubepodsStats,
	} {
		s, ok := lookup()
		if assert.True(t, ok, name) {
			assert.Equal(t, uint64(200<<20), s.Memory.WorkingSet, name)
			assert.Equal(t, uint64(2500000000), s.CPU.UsageNanoseconds, name)
		}
	}
	_, ok = c.PodStats("another-uid")
	assert.False(t, ok)
}
