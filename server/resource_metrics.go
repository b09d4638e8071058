package server

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kubelet's resource metrics (pkg/kubelet/metrics/collectors/
// resource_metrics.go): names, help texts and labels as there, without the
// "[STABLE]"/"[ALPHA]" prefix k8s.io/component-base adds to the help. Its
// scrape_error, deprecated since 1.29 and hidden since, is left out.
var (
	containerLabels = []string{"container", "pod", "namespace"}
	podLabels       = []string{"pod", "namespace"}

	nodeCPUUsageDesc = prometheus.NewDesc("node_cpu_usage_seconds_total",
		"Cumulative cpu time consumed by the node in core-seconds", nil, nil)
	nodeMemoryUsageDesc = prometheus.NewDesc("node_memory_working_set_bytes",
		"Current working set of the node in bytes", nil, nil)
	nodeSwapUsageDesc = prometheus.NewDesc("node_swap_usage_bytes",
		"Current swap usage of the node in bytes. Reported only on non-windows systems", nil, nil)
	containerCPUUsageDesc = prometheus.NewDesc("container_cpu_usage_seconds_total",
		"Cumulative cpu time consumed by the container in core-seconds", containerLabels, nil)
	containerMemoryUsageDesc = prometheus.NewDesc("container_memory_working_set_bytes",
		"Current working set of the container in bytes", containerLabels, nil)
	containerSwapUsageDesc = prometheus.NewDesc("container_swap_usage_bytes",
		"Current amount of the container swap usage in bytes. Reported only on non-windows systems", containerLabels, nil)
	containerSwapLimitDesc = prometheus.NewDesc("container_swap_limit_bytes",
		"Current amount of the container swap limit in bytes. Reported only on non-windows systems", containerLabels, nil)
	containerStartTimeDesc = prometheus.NewDesc("container_start_time_seconds",
		"Start time of the container since unix epoch in seconds", containerLabels, nil)
	podCPUUsageDesc = prometheus.NewDesc("pod_cpu_usage_seconds_total",
		"Cumulative cpu time consumed by the pod in core-seconds", podLabels, nil)
	podMemoryUsageDesc = prometheus.NewDesc("pod_memory_working_set_bytes",
		"Current working set of the pod in bytes", podLabels, nil)
	podSwapUsageDesc = prometheus.NewDesc("pod_swap_usage_bytes",
		"Current amount of the pod swap usage in bytes. Reported only on non-windows systems", podLabels, nil)
	resourceScrapeErrorDesc = prometheus.NewDesc("resource_scrape_error",
		"1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
)

// NewResourceMetrics returns the kubelet's /metrics/resource collector,
// the endpoint metrics-server scrapes, read from stats' summary at each
// scrape: node_, pod_ and container_cpu_usage_seconds_total,
// _memory_working_set_bytes and _swap_usage_bytes,
// container_swap_limit_bytes (swap available + used),
// container_start_time_seconds, and resource_scrape_error (1 when the
// summary failed, then nothing else). A field the summary lacks (nil CPU,
// Memory, Swap or value) gives no sample. Each sample carries its stats'
// time as its timestamp (none when that time is zero; the start time has
// none), as the kubelet's do. The kubelet serves it on a registry of its
// own; cAdvisor's container_* metrics, on /metrics/cadvisor, have other
// labels under some of the same names.
func NewResourceMetrics(stats StatsProvider) prometheus.Collector {
	return &resourceMetrics{stats: stats}
}

type resourceMetrics struct {
	stats StatsProvider
}

// Describe implements prometheus.Collector.
func (*resourceMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{nodeCPUUsageDesc, nodeMemoryUsageDesc, nodeSwapUsageDesc,
		containerStartTimeDesc, containerCPUUsageDesc, containerMemoryUsageDesc, containerSwapUsageDesc,
		containerSwapLimitDesc, podCPUUsageDesc, podMemoryUsageDesc, podSwapUsageDesc, resourceScrapeErrorDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (r *resourceMetrics) Collect(ch chan<- prometheus.Metric) {
	// The kubelet's collector, too, has no request context.
	s, err := r.stats.Summary(context.Background())
	if err != nil || s == nil {
		ch <- prometheus.MustNewConstMetric(resourceScrapeErrorDesc, prometheus.GaugeValue, 1)
		return
	}
	n := s.Node
	if n.CPU != nil && n.CPU.UsageCoreNanoSeconds != nil {
		ch <- sample(nodeCPUUsageDesc, prometheus.CounterValue, n.CPU.Time, seconds(*n.CPU.UsageCoreNanoSeconds))
	}
	if n.Memory != nil && n.Memory.WorkingSetBytes != nil {
		ch <- sample(nodeMemoryUsageDesc, prometheus.GaugeValue, n.Memory.Time, float64(*n.Memory.WorkingSetBytes))
	}
	if n.Swap != nil && n.Swap.SwapUsageBytes != nil {
		// The kubelet stamps the node's swap with its memory's time (and
		// panics without memory stats): here the swap's own then.
		t := n.Swap.Time
		if n.Memory != nil {
			t = n.Memory.Time
		}
		ch <- sample(nodeSwapUsageDesc, prometheus.GaugeValue, t, float64(*n.Swap.SwapUsageBytes))
	}
	for i := range s.Pods {
		p := &s.Pods[i]
		name, ns := p.PodRef.Name, p.PodRef.Namespace
		for j := range p.Containers {
			c := &p.Containers[j]
			if c.StartTime.Unix() > 0 {
				ch <- sample(containerStartTimeDesc, prometheus.GaugeValue, metav1.Time{},
					float64(c.StartTime.UnixNano())/float64(time.Second), c.Name, name, ns)
			}
			if c.CPU != nil && c.CPU.UsageCoreNanoSeconds != nil {
				ch <- sample(containerCPUUsageDesc, prometheus.CounterValue, c.CPU.Time, seconds(*c.CPU.UsageCoreNanoSeconds), c.Name, name, ns)
			}
			if c.Memory != nil && c.Memory.WorkingSetBytes != nil {
				ch <- sample(containerMemoryUsageDesc, prometheus.GaugeValue, c.Memory.Time, float64(*c.Memory.WorkingSetBytes), c.Name, name, ns)
			}
			if c.Swap != nil {
				var used float64
				if c.Swap.SwapUsageBytes != nil {
					used = float64(*c.Swap.SwapUsageBytes)
					ch <- sample(containerSwapUsageDesc, prometheus.GaugeValue, c.Swap.Time, used, c.Name, name, ns)
				}
				if c.Swap.SwapAvailableBytes != nil {
					ch <- sample(containerSwapLimitDesc, prometheus.GaugeValue, c.Swap.Time, float64(*c.Swap.SwapAvailableBytes)+used, c.Name, name, ns)
				}
			}
		}
		if p.CPU != nil && p.CPU.UsageCoreNanoSeconds != nil {
			ch <- sample(podCPUUsageDesc, prometheus.CounterValue, p.CPU.Time, seconds(*p.CPU.UsageCoreNanoSeconds), name, ns)
		}
		if p.Memory != nil && p.Memory.WorkingSetBytes != nil {
			ch <- sample(podMemoryUsageDesc, prometheus.GaugeValue, p.Memory.Time, float64(*p.Memory.WorkingSetBytes), name, ns)
		}
		if p.Swap != nil && p.Swap.SwapUsageBytes != nil {
			ch <- sample(podSwapUsageDesc, prometheus.GaugeValue, p.Swap.Time, float64(*p.Swap.SwapUsageBytes), name, ns)
		}
	}
	ch <- prometheus.MustNewConstMetric(resourceScrapeErrorDesc, prometheus.GaugeValue, 0)
}

// sample is a const metric stamped with its stats' time, if any. A label
// value that is not UTF-8 makes it an invalid metric: the scrape reports
// the error and serves the rest.
func sample(d *prometheus.Desc, t prometheus.ValueType, at metav1.Time, v float64, labels ...string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(d, t, v, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	if at.IsZero() {
		return m
	}
	return prometheus.NewMetricWithTimestamp(at.Time, m)
}

func seconds(ns uint64) float64 { return float64(ns) / float64(time.Second) }
