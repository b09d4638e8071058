//go:build integration

package nodeagent_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/cgroupmgr"
	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/promtest"
	"github.com/nodekit-dev/nodekit/internal/testenv"
	"github.com/nodekit-dev/nodekit/nodeagent"
	"github.com/nodekit-dev/nodekit/server/serverauth"
	"github.com/nodekit-dev/nodekit/server/serving"
)

// The kubernetes-mixin's selectors for the kubelet's two endpoints, as
// kube-prometheus labels them.
const (
	cadvisorSel = `job="kubelet", metrics_path="/metrics/cadvisor"`
	kubeletSel  = `job="kubelet", metrics_path="/metrics"`
)

// TestPrometheusScrapesTheAgent: a real Prometheus scrapes the agent's
// /metrics/cadvisor and /metrics over TLS with a bearer token the API
// server authenticates (and authorizes for nodes/metrics), as
// kube-prometheus does; the kubernetes-mixin's expressions for container
// CPU, memory working set, network and CPU throttling return one series
// per test pod, within 10% of what the cgroup and /proc files say (the
// rates over 30s, not 5m: the test does not run for 5m); promtool finds in
// the expositions only the kubelet's and cAdvisor's own names it dislikes
// (counters without _total: container_memory_failcnt, the evented PLEG's
// and kubelet_pleg_discard_events; the gauge container_fs_inodes_total),
// which the kubelet serves the same.
func TestPrometheusScrapesTheAgent(t *testing.T) {
	cd := testenv.NeedContainerd(t)
	api := testenv.NeedAPIServer(t)
	reg := prometheus.NewRegistry()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	a, _ := startPodsAgent(t, ctx, cd, "prom", map[string]string{"busy.yaml": cadvisorPod, "net.yaml": `apiVersion: v1
kind: Pod
metadata: {name: net, namespace: default}
spec:
  hostNetwork: true
  containers:
  - {name: c, image: nodekit.local/testbin:1, imagePullPolicy: Never, args: [sleep]}
`},
		func(c *nodeagent.Config) {
			c.CAdvisorHousekeepingInterval, c.Registerer, c.Gatherer = time.Second, reg, reg
		})

	// The API port as the kubelet's: TLS, webhook authentication and
	// authorization against the API server.
	port := freePorts(t, 1)[0]
	webhook := serverauth.Config{NodeName: api.Node, TokenReviews: api.NodeClient.AuthenticationV1().TokenReviews(),
		SubjectAccessReviews: api.NodeClient.AuthorizationV1().SubjectAccessReviews(),
		Authentication: kubeletconfig.KubeletAuthentication{Webhook: kubeletconfig.KubeletWebhookAuthentication{Enabled: ptr.To(true)},
			Anonymous: kubeletconfig.KubeletAnonymousAuthentication{Enabled: ptr.To(false)}},
		Authorization: kubeletconfig.KubeletAuthorization{Mode: kubeletconfig.KubeletAuthorizationModeWebhook}}
	servers, err := serving.Listen(serving.Config{Address: "127.0.0.1", Port: port, Auth: webhook, API: a.APIHandler(),
		TLS: serverauth.TLSOptions{CertDir: t.TempDir(), Hostname: api.Node}, Registerer: reg})
	require.NoError(t, err)
	serveCtx, stopServing := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- servers.Run(serveCtx) }()
	defer func() { stopServing(); assert.NoError(t, <-served) }()

	pods := map[string]v1.Pod{}
	poll.Eventually(t, func() bool {
		for _, p := range a.Pods() {
			if p.Status.Phase == v1.PodRunning {
				pods[strings.SplitN(p.Name, "-", 2)[0]] = p
			}
		}
		return len(pods) == 2
	}, time.Minute, 20*time.Millisecond, "both pods running")
	busy, netPod := pods["busy"], pods["net"]
	busyCgroup, err := a.Cgroups().PodCgroupName(&busy)
	require.NoError(t, err)
	busyPath := a.Cgroups().Path(busyCgroup)
	cpu0, at0 := cgroupCPUSeconds(t, busyPath), time.Now()
	burnPath := busyPath + "/" + containerIDOf(busy, "burn")
	periods0, throttled0 := cgroupCFS(t, burnPath)

	base := "https://127.0.0.1:" + strconv.Itoa(port)
	prom := promtest.Start(t, promtest.Config{Targets: []promtest.Target{
		{URL: base + "/metrics/cadvisor", BearerToken: api.AdminConfig.BearerToken, InsecureSkipVerify: true},
		{URL: base + "/metrics", BearerToken: api.AdminConfig.BearerToken, InsecureSkipVerify: true, HonorTimestamps: true},
	}})
	prom.WaitForTargetsUp(t, time.Minute)
	query := func(q string) promtest.Vector {
		t.Helper()
		v, err := prom.Query(ctx, q)
		require.NoError(t, err, q)
		return v
	}
	// The mixin's rates are over 5m, which a rate divides by whatever part
	// of it has samples: here 30s windows, once full (30 scrapes).
	poll.Eventually(t, func() bool {
		return len(query(`count_over_time(container_cpu_usage_seconds_total{`+cadvisorSel+`, container="burn"}[30s]) >= 29`)) == 1
	}, 2*time.Minute, time.Second, "30s of samples of the busy container's CPU")
	onePerPod := func(what, q, pod string) float64 {
		t.Helper()
		var got []promtest.Sample
		for _, s := range query(q) {
			if s.Metric["pod"] == pod {
				got = append(got, s)
			}
		}
		require.Len(t, got, 1, "%s: one series for pod %s: %v", what, pod, got)
		return got[0].Value
	}

	// CPU: the mixin's node_namespace_pod_container:container_cpu_usage_seconds_total:sum_rate5m, by pod.
	cpu := onePerPod("CPU", `sum by (namespace, pod) (rate(container_cpu_usage_seconds_total{`+cadvisorSel+`, image!=""}[30s]))`, busy.Name)
	cpuFiles := (cgroupCPUSeconds(t, busyPath) - cpu0) / time.Since(at0).Seconds()
	assert.InEpsilon(t, cpuFiles, cpu, 0.1, "CPU rate: the cgroup's is %v", cpuFiles)

	// Memory: node_namespace_pod_container:container_memory_working_set_bytes, by pod.
	ws := onePerPod("memory", `sum by (namespace, pod) (container_memory_working_set_bytes{`+cadvisorSel+`, image!=""})`, busy.Name)
	wsFiles := cgroupWorkingSet(t, busyPath+"/"+containerIDOf(busy, "hold")) + cgroupWorkingSet(t, burnPath)
	assert.InEpsilon(t, wsFiles, ws, 0.1, "working set: the cgroups' is %v", wsFiles)

	// Throttling: CPUThrottlingHigh's ratio, for the busy container.
	without := "without (id, metrics_path, name, image, endpoint, job, node)"
	topk := func(m, extra string) string {
		return "sum " + without + " (topk by (namespace, pod, container, instance) (1, increase(" + m + "{" + extra + cadvisorSel + "}[5m])))"
	}
	throttling := onePerPod("throttling", topk("container_cpu_cfs_throttled_periods_total", `container!="", `)+
		" / on (namespace, pod, container, instance) group_left "+topk("container_cpu_cfs_periods_total", "")+" > (25 / 100)", busy.Name)
	periods1, throttled1 := cgroupCFS(t, burnPath)
	throttlingFiles := float64(throttled1-throttled0) / float64(periods1-periods0)
	assert.InEpsilon(t, throttlingFiles, throttling, 0.1, "throttled periods: cpu.stat says %v", throttlingFiles)

	// Network: the pod dashboard's receive bandwidth, and the counters
	// against the node's interfaces (the pod is on the host's network).
	onePerPod("network", `sum by (pod) (8 * irate(container_network_receive_bytes_total{`+cadvisorSel+`}[5m]))`, netPod.Name)
	rx := onePerPod("network", `sum by (pod) (container_network_receive_bytes_total{`+cadvisorSel+`})`, netPod.Name)
	rxFiles := hostReceivedBytes(t)
	assert.InEpsilon(t, rxFiles, rx, 0.1, "received bytes: /proc/net/dev says %v", rxFiles)

	// The exposition as promtool reads it.
	tool := promtest.Promtool(t)
	assert.Equal(t, `container_fs_inodes_total non-counter metrics should not have "_total" suffix
container_memory_failcnt counter metrics should have "_total" suffix`,
		strings.TrimSpace(promtest.CheckMetrics(t, tool, scrape(t, base+"/metrics/cadvisor", api.AdminConfig.BearerToken))))
	// The kubelet's own names for these counters (evented PLEG, discarded events).
	assert.Equal(t, `kubelet_evented_pleg_connection_error_count counter metrics should have "_total" suffix
kubelet_evented_pleg_connection_error_count non-histogram and non-summary metrics should not have "_count" suffix
kubelet_evented_pleg_connection_success_count counter metrics should have "_total" suffix
kubelet_evented_pleg_connection_success_count non-histogram and non-summary metrics should not have "_count" suffix
kubelet_pleg_discard_events counter metrics should have "_total" suffix`,
		strings.TrimSpace(promtest.CheckMetrics(t, tool, scrape(t, base+"/metrics", api.AdminConfig.BearerToken))))
	for _, q := range []string{`kubelet_certificate_manager_server_ttl_seconds{` + kubeletSel + `}`,
		`kubelet_pleg_relist_interval_seconds_count{` + kubeletSel + `}`, `kubelet_running_containers{` + kubeletSel + `, container_state="running"}`} {
		assert.Len(t, query(q), 1, q)
	}
}

func containerIDOf(pod v1.Pod, name string) string {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == name {
			return strings.TrimPrefix(cs.ContainerID, "containerd://")
		}
	}
	return ""
}

// scrape GETs a metrics endpoint of the agent with a bearer token.
func scrape(t *testing.T, url, token string) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // the agent's self-signed certificate
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode, string(b))
	return b
}

// cgroupCPUSeconds is a cgroup's CPU use so far, from its files.
func cgroupCPUSeconds(t *testing.T, cgroup string) float64 {
	t.Helper()
	if cgroupmgr.HostMode() == cgroupmgr.ModeV2 {
		return cgroupStat(t, "/sys/fs/cgroup"+cgroup+"/cpu.stat", "usage_usec") / 1e6
	}
	b, err := os.ReadFile("/sys/fs/cgroup/cpuacct" + cgroup + "/cpuacct.usage")
	require.NoError(t, err)
	ns, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	require.NoError(t, err)
	return ns / 1e9
}

// cgroupCFS is a cgroup's CFS periods and throttled periods so far.
func cgroupCFS(t *testing.T, cgroup string) (periods, throttled int64) {
	t.Helper()
	file := "/sys/fs/cgroup/cpu" + cgroup + "/cpu.stat"
	if cgroupmgr.HostMode() == cgroupmgr.ModeV2 {
		file = "/sys/fs/cgroup" + cgroup + "/cpu.stat"
	}
	return int64(cgroupStat(t, file, "nr_periods")), int64(cgroupStat(t, file, "nr_throttled"))
}

func cgroupStat(t *testing.T, file, key string) float64 {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err)
			return f
		}
	}
	t.Fatalf("%s: no %s", file, key)
	return 0
}

// hostReceivedBytes sums the bytes received on the host's interfaces
// cAdvisor counts (not lo, veth*, docker*, nerdctl*).
func hostReceivedBytes(t *testing.T) float64 {
	t.Helper()
	b, err := os.ReadFile("/proc/1/net/dev")
	require.NoError(t, err)
	var sum float64
	for _, line := range strings.Split(string(b), "\n")[2:] {
		name, counters, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "lo" || strings.HasPrefix(name, "veth") || strings.HasPrefix(name, "docker") || strings.HasPrefix(name, "nerdctl") {
			continue
		}
		var rx float64
		_, err := fmt.Sscan(counters, &rx)
		require.NoError(t, err)
		sum += rx
	}
	return sum
}
