package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodekit-dev/nodekit/server"
)

// summaryFunc is a StatsProvider.
type summaryFunc func(context.Context) (*statsapi.Summary, error)

func (f summaryFunc) Summary(ctx context.Context) (*statsapi.Summary, error) { return f(ctx) }

func u64(v uint64) *uint64 { return &v }

// Stats times, a second apart, to tell which one stamps a sample.
var (
	cpuAt  = metav1.NewTime(time.Date(2026, 11, 23, 10, 0, 1, 0, time.UTC))
	memAt  = metav1.NewTime(time.Date(2026, 11, 23, 10, 0, 2, 0, time.UTC))
	swapAt = metav1.NewTime(time.Date(2026, 11, 23, 10, 0, 3, 0, time.UTC))
	start  = metav1.NewTime(time.Date(2026, 11, 23, 9, 0, 0, 500_000_000, time.UTC))
)

// A node with CPU, memory and swap; pod default/web with everything, its
// container app too, its sidecar with nothing but a swap limit; pod
// prod/db with no stats of its own and a container with some.
func resourceSummary() *statsapi.Summary {
	return &statsapi.Summary{
		Node: statsapi.NodeStats{NodeName: "n1",
			CPU:    &statsapi.CPUStats{Time: cpuAt, UsageCoreNanoSeconds: u64(2_500_000_000)},
			Memory: &statsapi.MemoryStats{Time: memAt, WorkingSetBytes: u64(1 << 30)},
			Swap:   &statsapi.SwapStats{Time: swapAt, SwapUsageBytes: u64(4096)}},
		Pods: []statsapi.PodStats{{
			PodRef: statsapi.PodReference{Name: "web", Namespace: "default", UID: "u1"},
			CPU:    &statsapi.CPUStats{Time: cpuAt, UsageCoreNanoSeconds: u64(500_000_000)},
			Memory: &statsapi.MemoryStats{Time: memAt, WorkingSetBytes: u64(2048)},
			Swap:   &statsapi.SwapStats{Time: swapAt, SwapUsageBytes: u64(100)},
			Containers: []statsapi.ContainerStats{{
				Name: "app", StartTime: start,
				CPU:    &statsapi.CPUStats{Time: cpuAt, UsageCoreNanoSeconds: u64(300_000_000)},
				Memory: &statsapi.MemoryStats{Time: memAt, WorkingSetBytes: u64(1024)},
				Swap:   &statsapi.SwapStats{Time: swapAt, SwapUsageBytes: u64(60), SwapAvailableBytes: u64(40)},
			}, {
				Name:   "sidecar",
				Memory: &statsapi.MemoryStats{Time: memAt, UsageBytes: u64(99)},
				Swap:   &statsapi.SwapStats{Time: swapAt, SwapAvailableBytes: u64(10)},
			}},
		}, {
			PodRef: statsapi.PodReference{Name: "db", Namespace: "prod", UID: "u2"},
			Containers: []statsapi.ContainerStats{{
				Name: "pg", StartTime: start,
				CPU:    &statsapi.CPUStats{Time: cpuAt},
				Memory: &statsapi.MemoryStats{Time: memAt, WorkingSetBytes: u64(512)},
			}},
		}},
	}
}

type sampleAt struct {
	value float64
	ms    int64 // 0: no timestamp
}

// scrape gets path from a real server and parses the text format into
// name{label="value",...} → value and timestamp, and name → type.
func scrape(t *testing.T, h http.Handler, path string) (map[string]sampleAt, map[string]string) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	samples, types := map[string]sampleAt{}, map[string]string{}
	for name, mf := range mfs {
		types[name] = mf.GetType().String()
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(labels)
			key := name
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			samples[key] = sampleAt{value: value(m), ms: m.GetTimestampMs()}
		}
	}
	return samples, types
}

func value(m *dto.Metric) float64 {
	if m.GetCounter() != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

func TestResourceMetrics(t *testing.T) {
	ok := summaryFunc(func(context.Context) (*statsapi.Summary, error) { return resourceSummary(), nil })
	failing := summaryFunc(func(context.Context) (*statsapi.Summary, error) { return nil, errors.New("runtime down") })
	own := func(p server.StatsProvider) prometheus.Gatherer {
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(server.NewResourceMetrics(p))
		return reg
	}
	cpu, mem, swap := cpuAt.UnixMilli(), memAt.UnixMilli(), swapAt.UnixMilli()
	want := map[string]sampleAt{
		`node_cpu_usage_seconds_total`:  {2.5, cpu},
		`node_memory_working_set_bytes`: {1 << 30, mem},
		// The kubelet stamps the node's swap with the memory's time.
		`node_swap_usage_bytes`: {4096, mem},
		`pod_cpu_usage_seconds_total{namespace="default",pod="web"}`:                        {0.5, cpu},
		`pod_memory_working_set_bytes{namespace="default",pod="web"}`:                       {2048, mem},
		`pod_swap_usage_bytes{namespace="default",pod="web"}`:                               {100, swap},
		`container_start_time_seconds{container="app",namespace="default",pod="web"}`:       {float64(start.Unix()) + 0.5, 0},
		`container_cpu_usage_seconds_total{container="app",namespace="default",pod="web"}`:  {0.3, cpu},
		`container_memory_working_set_bytes{container="app",namespace="default",pod="web"}`: {1024, mem},
		`container_swap_usage_bytes{container="app",namespace="default",pod="web"}`:         {60, swap},
		`container_swap_limit_bytes{container="app",namespace="default",pod="web"}`:         {100, swap},
		// sidecar: no start time, CPU or working set; a limit without usage.
		`container_swap_limit_bytes{container="sidecar",namespace="default",pod="web"}`: {10, swap},
		// db: no pod stats; pg has no CPU usage.
		`container_start_time_seconds{container="pg",namespace="prod",pod="db"}`:       {float64(start.Unix()) + 0.5, 0},
		`container_memory_working_set_bytes{container="pg",namespace="prod",pod="db"}`: {512, mem},
		`resource_scrape_error`: {0, 0},
	}
	for _, tc := range []struct {
		name string
		cfg  server.Config
		want map[string]sampleAt
	}{
		{"from Stats", server.Config{Stats: ok}, want},
		{"the caller's registry", server.Config{ResourceMetrics: own(ok)}, want},
		{"the caller's registry over Stats", server.Config{Stats: failing, ResourceMetrics: own(ok)}, want},
		{"a failing summary", server.Config{Stats: failing}, map[string]sampleAt{`resource_scrape_error`: {1, 0}}},
		{"a nil summary", server.Config{Stats: summaryFunc(func(context.Context) (*statsapi.Summary, error) { return nil, nil })},
			map[string]sampleAt{`resource_scrape_error`: {1, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, types := scrape(t, mustNew(t, tc.cfg), "/metrics/resource")
			require.Len(t, got, len(tc.want))
			for k, w := range tc.want {
				require.Contains(t, got, k)
				assert.InDelta(t, w.value, got[k].value, 1e-9, k)
				assert.Equal(t, w.ms, got[k].ms, "timestamp of %s", k)
			}
			for name, typ := range types {
				wantType := "GAUGE"
				if strings.HasSuffix(name, "_seconds_total") {
					wantType = "COUNTER"
				}
				assert.Equal(t, wantType, typ, name)
			}
		})
	}
}

func TestResourceMetricsHelp(t *testing.T) {
	h := mustNew(t, server.Config{Stats: summaryFunc(func(context.Context) (*statsapi.Summary, error) { return resourceSummary(), nil })})
	_, body := get(h, "/metrics/resource")
	for _, line := range []string{
		"# HELP container_cpu_usage_seconds_total Cumulative cpu time consumed by the container in core-seconds",
		"# HELP node_memory_working_set_bytes Current working set of the node in bytes",
		"# HELP resource_scrape_error 1 if there was an error while getting container metrics, 0 otherwise",
		"# HELP container_start_time_seconds Start time of the container since unix epoch in seconds",
	} {
		assert.Contains(t, body, line+"\n")
	}
}

func TestMetricsEndpoints(t *testing.T) {
	probes := prometheus.NewRegistry()
	probes.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "prober_probe_total"}))
	for _, tc := range []struct {
		name     string
		cfg      server.Config
		path     string
		wantCode int
		want     string
	}{
		{"probes", server.Config{ProbeMetrics: probes}, "/metrics/probes", 200, "prober_probe_total 0"},
		{"probes unset", server.Config{Metrics: probes}, "/metrics/probes", 404, ""},
		{"resource unset", server.Config{Metrics: probes}, "/metrics/resource", 404, ""},
		{"/metrics is not the resource metrics", server.Config{ProbeMetrics: probes}, "/metrics", 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(mustNew(t, tc.cfg), tc.path)
			assert.Equal(t, tc.wantCode, code)
			assert.Contains(t, body, tc.want)
		})
	}
}

// 110 pods (the default --max-pods) of 2 containers each.
func BenchmarkResourceMetrics(b *testing.B) {
	sum := &statsapi.Summary{Node: resourceSummary().Node}
	for i := range 110 {
		p := statsapi.PodStats{PodRef: statsapi.PodReference{Name: fmt.Sprintf("pod-%d", i), Namespace: "default"},
			CPU:    &statsapi.CPUStats{Time: cpuAt, UsageCoreNanoSeconds: u64(uint64(i) * 1e6)},
			Memory: &statsapi.MemoryStats{Time: memAt, WorkingSetBytes: u64(uint64(i) << 20)}}
		for _, c := range []string{"app", "sidecar"} {
			p.Containers = append(p.Containers, statsapi.ContainerStats{Name: c, StartTime: start,
				CPU:    &statsapi.CPUStats{Time: cpuAt, UsageCoreNanoSeconds: u64(uint64(i) * 1e6)},
				Memory: &statsapi.MemoryStats{Time: memAt, WorkingSetBytes: u64(uint64(i) << 19)}})
		}
		sum.Pods = append(sum.Pods, p)
	}
	h, err := server.New(server.Config{Stats: summaryFunc(func(context.Context) (*statsapi.Summary, error) { return sum, nil })})
	require.NoError(b, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := http.Get(srv.URL + "/metrics/resource")
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || n == 0 {
			b.Fatalf("status %d, %d bytes", resp.StatusCode, n)
		}
	}
}
