//go:build integration

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/nodekit-dev/nodekit/cgroupmgr"
	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/testenv"
	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/nodeagent"
	"github.com/nodekit-dev/nodekit/runtime"
)

// TestMeasureAgent runs N static pods (hostNetwork testbin servers with an
// HTTP readiness probe every second) on the real containerd and reports, as
// "MEASURE" log lines: manifest written → Running latency p50/p99 with all
// manifests written at once (burst), the agent's CPU and RSS over a steady
// window, and the latency again with one manifest written every
// NODEKIT_MEASURE_INTERVAL (paced, default 250ms). NODEKIT_MEASURE_PODS
// (default 10) and NODEKIT_MEASURE_WINDOW (default 10s) set the size; the
// issue's figure is 110 pods over 60s.
//
// First, as a yardstick for the machine, the same pods are started with no
// agent at all: kuberuntime.Manager.SyncPod called for each, all at once. And
// the burst line says how busy the machine was and how much of that was
// the agent: start latency there is the runtime's unless the agent's share
// is large.
func TestMeasureAgent(t *testing.T) {
	cd := testenv.NeedContainerd(t)
	pods, window := 10, 10*time.Second
	if v := os.Getenv("NODEKIT_MEASURE_PODS"); v != "" {
		pods, _ = strconv.Atoi(v)
	}
	if v := os.Getenv("NODEKIT_MEASURE_WINDOW"); v != "" {
		window, _ = time.ParseDuration(v)
	}
	bare, bareBusy := bareRuntimeStarts(t, cd.Endpoint, freePorts(t, pods))
	t.Logf("MEASURE pods=%d no agent (SyncPod each, all at once): start p50=%v p99=%v all=%v; machine busy %.2f of %d cores",
		pods, pct(bare, 0.5), pct(bare, 0.99), pct(bare, 1), bareBusy, goruntime.NumCPU())
	dir, podLogsDir, rootDir := t.TempDir(), t.TempDir(), t.TempDir()
	agentPorts := freePorts(t, 2)
	apiPort, healthzPort := agentPorts[0], agentPorts[1]
	cgroupRoot := testenv.CgroupRoot + "/measure-" + rand.String(6)
	// NODEKIT_AGENT_BIN measures an agent binary built beforehand (say,
	// without -race) instead of the one built here.
	bin := os.Getenv("NODEKIT_AGENT_BIN")
	if bin == "" {
		bin = buildAgent(t, t.TempDir())
	}
	agent := &agentProcess{t: t, bin: bin, logPath: filepath.Join(t.TempDir(), "agent.log"), healthz: healthzPort,
		args: func(nodeIP string) []string {
			return strings.Fields(fmt.Sprintf("--runtime remote --container-runtime-endpoint %s --pod-manifest-path %s --hostname-override m "+
				"--node-ip %s --pod-logs-dir %s --root-dir %s --port 0 --address 127.0.0.1 --read-only-port %d --healthz-port %d --cgroup-root %s",
				cd.Endpoint, dir, nodeIP, podLogsDir, rootDir, apiPort, healthzPort, cgroupRoot))
		}}
	defer func() {
		agent.stop(syscall.SIGTERM)
		cg, err := cgroupmgr.New(cgroupmgr.Config{CgroupRoot: cgroupRoot})
		require.NoError(t, err)
		require.NoError(t, cg.Destroy(cg.KubepodsCgroupName()), "agent log: %s", agent.logPath)
	}()
	agent.start("127.0.0.1")
	pid := agent.pid()
	apiURL := fmt.Sprintf("http://127.0.0.1:%d/pods", apiPort)
	poll.Eventually(t, func() bool { _, err := listPods(apiURL); return err == nil }, 30*time.Second, 100*time.Millisecond)

	ports := freePorts(t, pods)
	manifest := func(i int) string { return filepath.Join(dir, fmt.Sprintf("p%03d.yaml", i)) }
	write := func(i int) {
		require.NoError(t, os.WriteFile(manifest(i), []byte(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: p%03d}
spec:
  hostNetwork: true
  containers:
  - name: srv
    image: nodekit.local/testbin:1
    imagePullPolicy: Never
    args: [serve]
    env: [{name: PORT, value: "%d"}]
    readinessProbe:
      httpGet: {path: /readyz, port: %d}
      periodSeconds: 1
`, i, ports[i], ports[i])), 0o644))
	}
	removed := 0
	removeAll := func() {
		for i := range ports {
			require.NoError(t, os.Remove(manifest(i)))
		}
		poll.Eventually(t, func() bool { list, err := listPods(apiURL); return err == nil && len(list.Items) == 0 }, 3*time.Minute, 100*time.Millisecond)
		// Gone from /pods at once; killed and removed from the runtime
		// (which the next phase must not compete with) a little later.
		removed += pods
		poll.Eventually(t, func() bool { return strings.Count(agent.logText(), "pod terminated and removed") >= removed }, 3*time.Minute, 100*time.Millisecond)
	}

	// Burst: every manifest written at once, as the figure.
	logFrom := logSize(t, agent)
	written := map[string]time.Time{}
	for i := range ports {
		write(i)
		written[fmt.Sprintf("p%03d-m", i)] = time.Now() // static pods are named <name>-<node>
	}
	burstCPU0, burstBusy0, burstT0 := procCPU(t, pid), machineBusy(t), time.Now()
	burst := startLatencies(t, agent, logFrom, apiURL, written, nil)
	burstElapsed := time.Since(burstT0)
	burstCPU, burstBusy := procCPU(t, pid)-burstCPU0, machineBusy(t)-burstBusy0
	t.Logf("MEASURE pods=%d burst: runtime calls so far: %s", pods, runtimeCalls(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", apiPort)))
	t.Logf("MEASURE pods=%d burst: machine busy %.2f of %d cores for %v, the agent %.2f of them (%v CPU per pod)",
		pods, burstBusy.Seconds()/burstElapsed.Seconds(), goruntime.NumCPU(), burstElapsed.Round(time.Millisecond),
		burstCPU.Seconds()/burstElapsed.Seconds(), (burstCPU / time.Duration(pods)).Round(time.Millisecond))

	cpu0 := procCPU(t, pid)
	time.Sleep(window) // the steady window being measured
	cpu := procCPU(t, pid) - cpu0
	rss, anon := procRSS(t, pid)
	t.Logf("MEASURE pods=%d burst start p50=%v p99=%v all=%v; steady window=%v cpu=%.3f core rss=%.1f MiB (anon %.1f MiB)",
		pods, pct(burst, 0.5), pct(burst, 0.99), pct(burst, 1),
		window, cpu.Seconds()/window.Seconds(), float64(rss)/(1<<20), float64(anon)/(1<<20))
	removeAll()

	// Paced: one manifest every NODEKIT_MEASURE_INTERVAL, each pod's
	// latency from its own write; what a node sees outside a cold start.
	interval := 250 * time.Millisecond
	if v := os.Getenv("NODEKIT_MEASURE_INTERVAL"); v != "" {
		var err error
		interval, err = time.ParseDuration(v)
		require.NoError(t, err, "NODEKIT_MEASURE_INTERVAL")
	}
	written = map[string]time.Time{}
	logFrom = logSize(t, agent)
	pace := time.NewTicker(interval)
	defer pace.Stop()
	i := 0
	paced := startLatencies(t, agent, logFrom, apiURL, written, func() bool {
		if i == pods {
			return false
		}
		select {
		case <-pace.C:
			write(i)
			written[fmt.Sprintf("p%03d-m", i)] = time.Now() // static pods are named <name>-<node>
			i++
		default:
		}
		return i < pods
	})
	require.Len(t, paced, pods)
	t.Logf("MEASURE pods=%d paced every %v: start p50=%v p99=%v max=%v", pods, interval, pct(paced, 0.5), pct(paced, 0.99), pct(paced, 1))
	removeAll()
}

// startLatencies waits until every pod in written is Running and returns
// the sorted manifest-written → Running latencies. The moment a pod turned
// Running is read from the agent's log ("pod status ... phase=Running",
// logged as /pods starts to show it), not by polling /pods: polling often
// enough for the figure would itself load the agent (a 110-pod PodList
// encoded 100 times a second was a third of its CPU in a burst). /pods is
// asked once at the end to confirm. writeMore, if set, may add to written
// before each look and says whether more pods are still to come. The log
// is read from offset from: its size before the first manifest was written.
func startLatencies(t *testing.T, agent *agentProcess, from int64, apiURL string, written map[string]time.Time, writeMore func() bool) []time.Duration {
	t.Helper()
	log, err := os.Open(agent.logPath)
	require.NoError(t, err)
	defer log.Close()
	_, err = log.Seek(from, io.SeekStart)
	require.NoError(t, err)
	lines := bufio.NewReader(log)
	var partial string
	runningAt := map[string]time.Time{}
	poll.Eventually(t, func() bool {
		more := writeMore != nil && writeMore()
		for {
			line, err := lines.ReadString('\n')
			if err != nil { // a line still being written: keep it for later
				partial += line
				break
			}
			line, partial = partial+line, ""
			if !strings.Contains(line, `msg="pod status"`) || !strings.Contains(line, " phase=Running ") {
				continue
			}
			name, at := logPodAndTime(t, line)
			if _, seen := runningAt[name]; !seen {
				runningAt[name] = at
			}
		}
		if more {
			return false
		}
		for name := range written {
			if _, ok := runningAt[name]; !ok {
				return false
			}
		}
		return true
	}, 3*time.Minute, 20*time.Millisecond, "every pod running; %s", func() string {
		return fmt.Sprintf("%d of %d are", len(runningAt), len(written))
	})
	list, err := listPods(apiURL)
	require.NoError(t, err)
	onAPI := 0
	for _, p := range list.Items {
		if _, ok := written[p.Name]; ok && p.Status.Phase == v1.PodRunning {
			onAPI++
		}
	}
	require.Equal(t, len(written), onAPI, "pods Running on /pods")
	lat := make([]time.Duration, 0, len(written))
	for name, at := range written {
		lat = append(lat, runningAt[name].Sub(at))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat
}

// runtimeCalls is the agent's CRI calls by operation, from its
// kubelet_runtime_operations_total counters: "list_containers=123 ...".
func runtimeCalls(t *testing.T, metricsURL string) string {
	t.Helper()
	resp, err := http.Get(metricsURL)
	require.NoError(t, err)
	defer resp.Body.Close()
	var calls []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), `kubelet_runtime_operations_total{operation_type="`)
		if !ok {
			continue
		}
		op, n, _ := strings.Cut(rest, `"} `)
		calls = append(calls, op+"="+n)
	}
	require.NoError(t, sc.Err())
	return strings.Join(calls, " ")
}

func logSize(t *testing.T, agent *agentProcess) int64 {
	fi, err := os.Stat(agent.logPath)
	require.NoError(t, err)
	return fi.Size()
}

// logPodAndTime reads the pod's name and the time from one of the agent's
// log lines: time=2026-11-22T09:11:52.244Z level=INFO msg="pod status" pod=default/NAME ...
func logPodAndTime(t *testing.T, line string) (string, time.Time) {
	t.Helper()
	var ts, name string
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, "time="); ok {
			ts = v
		}
		if v, ok := strings.CutPrefix(f, "pod="); ok {
			_, name, _ = strings.Cut(v, "/")
		}
	}
	at, err := time.Parse(time.RFC3339Nano, ts)
	require.NoError(t, err, "agent log line %q", line)
	require.NotEmpty(t, name, "agent log line %q", line)
	return name, at
}

// pct is the p-th quantile of sorted durations, rounded to the millisecond.
func pct(sorted []time.Duration, p float64) time.Duration {
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))].Round(time.Millisecond)
}

func listPods(url string) (*v1.PodList, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var list v1.PodList
	return &list, json.NewDecoder(resp.Body).Decode(&list)
}

// machineBusy is the CPU time all cores have spent not idle since boot
// (/proc/stat: everything but idle and iowait).
func machineBusy(t *testing.T) time.Duration {
	b, err := os.ReadFile("/proc/stat")
	require.NoError(t, err)
	line, _, _ := strings.Cut(string(b), "\n")
	var busy int64
	for i, f := range strings.Fields(line)[1:] {
		n, err := strconv.ParseInt(f, 10, 64)
		require.NoError(t, err, "/proc/stat: %q", line)
		if i != 3 && i != 4 && i < 8 { // idle, iowait; guest times are already in user
			busy += n
		}
	}
	return time.Duration(busy) * time.Second / 100 // USER_HZ
}

// bareRuntimeStarts starts one hostNetwork testbin server per port with
// kuberuntime.Manager.SyncPod, all at once and with no agent, and returns the
// sorted SyncPod latencies (the container started) and how many cores were
// busy meanwhile; then it removes the pods and their cgroups.
func bareRuntimeStarts(t *testing.T, endpoint string, ports []int) ([]time.Duration, float64) {
	t.Helper()
	ctx := context.Background()
	client, err := runtime.Dial(ctx, endpoint)
	require.NoError(t, err)
	defer func() { _ = client.Close(ctx) }()
	// All at once (MaxParallelPodStarts -1), as the kubelet starts them:
	// the yardstick is the runtime's, not the Manager's turns.
	mgr, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: client, PodLogsDir: t.TempDir(),
		SandboxLabels: map[string]string{nodeagent.NodeLabel: "bare-" + rand.String(6)}, MaxParallelPodStarts: -1})
	require.NoError(t, err)
	grace := int64(1)
	podsToStart := make([]*v1.Pod, len(ports))
	for i, port := range ports {
		podsToStart[i] = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bare%03d", i), Namespace: "default", UID: types.UID(rand.String(16))},
			Spec: v1.PodSpec{HostNetwork: true, TerminationGracePeriodSeconds: &grace, Containers: []v1.Container{{
				Name: "srv", Image: "nodekit.local/testbin:1", ImagePullPolicy: v1.PullNever, Args: []string{"serve"},
				Env: []v1.EnvVar{{Name: "PORT", Value: strconv.Itoa(port)}}}}}}
	}
	lat := make([]time.Duration, len(ports))
	errs := make([]error, len(ports))
	busy0, t0 := machineBusy(t), time.Now()
	var wg sync.WaitGroup
	for i, pod := range podsToStart {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			errs[i] = mgr.SyncPod(ctx, pod, nil, kuberuntime.SyncOptions{CgroupParent: testenv.CgroupParent(string(pod.UID))}).Err()
			lat[i] = time.Since(start)
		}()
	}
	wg.Wait()
	busy := (machineBusy(t) - busy0).Seconds() / time.Since(t0).Seconds()
	for i, pod := range podsToStart {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Retried as a pod worker would: with many pods stopping at
			// once, containerd 1.6 sometimes fails a kill with "ttrpc:
			// closed" as the shim goes; the container is gone after.
			var err error
			for attempt := 0; attempt < 5; attempt++ {
				if _, err = mgr.TerminatePod(ctx, pod, nil); err == nil {
					break
				}
				time.Sleep(time.Second)
			}
			if errs[i] == nil {
				errs[i] = err
			}
			if err == nil {
				// Left behind, they were 1000 in each hierarchy after
				// four runs, and this yardstick 35 % slower.
				testenv.RemovePodCgroup(t, string(pod.UID))
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "pod %s", podsToStart[i].Name)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat, busy
}

// procCPU is the process's user+system CPU time from /proc/<pid>/stat.
func procCPU(t *testing.T, pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

// procRSS is the process's resident set size and its anonymous part, in bytes.
func procRSS(t *testing.T, pid int) (rss, anon int64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	kb := func(v string) int64 { n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64); return n << 10 }
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			rss = kb(v)
		}
		if v, ok := strings.CutPrefix(sc.Text(), "RssAnon:"); ok {
			anon = kb(v)
		}
	}
	require.NotZero(t, rss, "no VmRSS in /proc/%d/status", pid)
	return rss, anon
}
