//go:build integration

package nodeagent_test

import (
	"context"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/nodekit-dev/nodekit/cgroupmgr"
	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/testenv"
	"github.com/nodekit-dev/nodekit/nodeagent"
)

// cadvisorPod is a pod with a container burning CPU under a 200m limit and
// one holding 24 MiB.
const cadvisorPod = `apiVersion: v1
kind: Pod
metadata: {name: busy, namespace: default}
spec:
  containers:
  - {name: burn, image: nodekit.local/testbin:1, imagePullPolicy: Never, args: [burn],
     resources: {limits: {cpu: 200m, memory: 64Mi}}}
  - {name: hold, image: nodekit.local/testbin:1, imagePullPolicy: Never, args: [alloc, "24"],
     resources: {limits: {cpu: 500m, memory: 128Mi}}}
`

// TestCAdvisorMetricsOnContainerd: /metrics/cadvisor reports the pod's
// containers, sandbox and cgroup with the kubelet's labels, and its
// figures are the cgroup files': the working set within 10% of what
// memory's files say, CPU use at the 200m quota, CFS throttling.
func TestCAdvisorMetricsOnContainerd(t *testing.T) {
	cd := testenv.NeedContainerd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, _ := startPodsAgent(t, ctx, cd, "cadvisor", map[string]string{"busy.yaml": cadvisorPod},
		func(c *nodeagent.Config) { c.CAdvisorHousekeepingInterval = time.Second })
	var pod v1.Pod
	poll.Eventually(t, func() bool {
		ps := a.Pods()
		if len(ps) == 1 && ps[0].Status.Phase == v1.PodRunning {
			pod = ps[0]
			return true
		}
		return false
	}, time.Minute, 20*time.Millisecond, "the pod running")
	ids := map[string]string{}
	for _, cs := range pod.Status.ContainerStatuses {
		ids[cs.Name] = strings.TrimPrefix(cs.ContainerID, "containerd://")
	}
	podCgroup, err := a.Cgroups().PodCgroupName(&pod)
	require.NoError(t, err)
	podPath := a.Cgroups().Path(podCgroup)

	var first map[string]*dto.MetricFamily
	poll.Eventually(t, func() bool {
		first = scrapeCAdvisor(t, a)
		_, ok := seriesValue(first, "container_memory_working_set_bytes", map[string]string{"container": "hold"})
		return ok
	}, 30*time.Second, 200*time.Millisecond, "the containers' series")

	hold := map[string]string{"container": "hold", "pod": pod.Name, "namespace": pod.Namespace, "name": ids["hold"],
		"image": "nodekit.local/testbin:1", "id": podPath + "/" + ids["hold"]}
	ws, ok := seriesValue(first, "container_memory_working_set_bytes", hold)
	require.True(t, ok, "hold's series with the kubelet's labels %v in %v", hold, first["container_memory_working_set_bytes"])
	want := cgroupWorkingSet(t, podPath+"/"+ids["hold"])
	assert.InEpsilon(t, want, ws, 0.1, "working set: cgroup files say %v", want)
	assert.Greater(t, ws, float64(24<<20), "it holds 24 MiB")
	for name, v := range map[string]float64{"container_spec_cpu_quota": 20000, "container_spec_cpu_period": 100000,
		"container_spec_memory_limit_bytes": 64 << 20} {
		got, ok := seriesValue(first, name, map[string]string{"container": "burn"})
		if assert.True(t, ok, name) {
			assert.Equal(t, v, got, name)
		}
	}
	_, ok = seriesValue(first, "container_memory_working_set_bytes", map[string]string{"id": podPath, "pod": pod.Name, "container": ""})
	assert.True(t, ok, "the pod cgroup's series")
	_, ok = seriesValue(first, "container_cpu_usage_seconds_total", map[string]string{"pod": pod.Name, "container": "", "name": sandboxName(t, first, podPath)})
	assert.True(t, ok, "the sandbox's series")

	// /metrics/resource (and /stats/summary) have the same numbers, from
	// the same housekeeping.
	poll.Eventually(t, func() bool {
		c, r := scrapeCAdvisor(t, a), scrapeEndpoint(t, a, "/metrics/resource")
		cm := series(c, "container_memory_working_set_bytes", map[string]string{"container": "hold"})
		rm := series(r, "container_memory_working_set_bytes", map[string]string{"container": "hold"})
		if cm == nil || rm == nil || cm.GetTimestampMs() != rm.GetTimestampMs() {
			return false // a housekeeping between the two scrapes
		}
		assert.Equal(t, cm.GetGauge().GetValue(), rm.GetGauge().GetValue(), "the working set in both")
		return true
	}, 30*time.Second, 100*time.Millisecond, "/metrics/resource from the same housekeeping")

	// The CPU rate between two housekeepings: the quota's 0.2 CPU.
	u0, t0 := counterAt(t, first, "container_cpu_usage_seconds_total", map[string]string{"container": "burn"})
	p0, _ := counterAt(t, first, "container_cpu_cfs_throttled_periods_total", map[string]string{"container": "burn"})
	var u1, p1 float64
	var t1 int64
	poll.Eventually(t, func() bool {
		m := scrapeCAdvisor(t, a)
		u1, t1 = counterAt(t, m, "container_cpu_usage_seconds_total", map[string]string{"container": "burn"})
		p1, _ = counterAt(t, m, "container_cpu_cfs_throttled_periods_total", map[string]string{"container": "burn"})
		return t1-t0 >= 5000
	}, 30*time.Second, 500*time.Millisecond, "five seconds of housekeeping")
	rate := (u1 - u0) / (float64(t1-t0) / 1000)
	assert.InEpsilon(t, 0.2, rate, 0.1, "CPU rate at the 200m quota")
	assert.Greater(t, p1, p0, "throttled periods grow")
}

func scrapeCAdvisor(t *testing.T, a *nodeagent.Agent) map[string]*dto.MetricFamily {
	t.Helper()
	return scrapeEndpoint(t, a, "/metrics/cadvisor")
}

func scrapeEndpoint(t *testing.T, a *nodeagent.Agent, path string) map[string]*dto.MetricFamily {
	t.Helper()
	w := httptest.NewRecorder()
	a.APIHandler().ServeHTTP(w, httptest.NewRequest("GET", path, nil))
	require.Equal(t, 200, w.Code, w.Body.String())
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(w.Body)
	require.NoError(t, err)
	return mfs
}

func seriesValue(mfs map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	m := series(mfs, name, labels)
	if m == nil {
		return 0, false
	}
	if m.Counter != nil {
		return m.GetCounter().GetValue(), true
	}
	return m.GetGauge().GetValue(), true
}

func counterAt(t *testing.T, mfs map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, int64) {
	m := series(mfs, name, labels)
	require.NotNil(t, m, "%s %v", name, labels)
	return m.GetCounter().GetValue(), m.GetTimestampMs()
}

func series(mfs map[string]*dto.MetricFamily, name string, labels map[string]string) *dto.Metric {
next:
	for _, m := range mfs[name].GetMetric() {
		for k, v := range labels {
			found := false
			for _, lp := range m.GetLabel() {
				found = found || lp.GetName() == k && lp.GetValue() == v
			}
			if !found {
				continue next
			}
		}
		return m
	}
	return nil
}

// sandboxName is the name label of the pod's other cgroup than its
// containers: its sandbox's ID.
func sandboxName(t *testing.T, mfs map[string]*dto.MetricFamily, podPath string) string {
	for _, m := range mfs["container_memory_working_set_bytes"].GetMetric() {
		var id, container, name string
		for _, lp := range m.GetLabel() {
			switch lp.GetName() {
			case "id":
				id = lp.GetValue()
			case "container":
				container = lp.GetValue()
			case "name":
				name = lp.GetValue()
			}
		}
		if strings.HasPrefix(id, podPath+"/") && container == "" {
			return name
		}
	}
	t.Fatalf("no sandbox series under %s", podPath)
	return ""
}

// cgroupWorkingSet reads usage minus inactive file from the cgroup's
// memory files, v1 or v2.
func cgroupWorkingSet(t *testing.T, cgroup string) float64 {
	t.Helper()
	read := func(path string) string {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		return string(b)
	}
	stat := func(text, key string) float64 {
		for _, line := range strings.Split(text, "\n") {
			if k, v, ok := strings.Cut(line, " "); ok && k == key {
				f, _ := strconv.ParseFloat(v, 64)
				return f
			}
		}
		return 0
	}
	num := func(s string) float64 { f, _ := strconv.ParseFloat(strings.TrimSpace(s), 64); return f }
	if cgroupmgr.HostMode() == cgroupmgr.ModeV2 {
		dir := "/sys/fs/cgroup" + cgroup
		return num(read(dir+"/memory.current")) - stat(read(dir+"/memory.stat"), "inactive_file")
	}
	dir := "/sys/fs/cgroup/memory" + cgroup
	return num(read(dir+"/memory.usage_in_bytes")) - stat(read(dir+"/memory.stat"), "total_inactive_file")
}
