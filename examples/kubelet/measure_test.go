//go:build integration

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/nodekit-dev/nodekit/cgroupmgr"
	"github.com/nodekit-dev/nodekit/internal/testenv"
)

// runAgentEnv makes the test binary run the agent itself (main), so the
// measurement sees only the agent's process.
const runAgentEnv = "NODEKIT_RUN_AGENT"

func init() {
	if os.Getenv(runAgentEnv) == "1" {
		os.Args = append(os.Args[:1], strings.Fields(os.Getenv("NODEKIT_AGENT_ARGS"))...)
		main()
		os.Exit(0)
	}
}

// TestMeasureAgent writes N static pods at once (hostNetwork testbin
// servers with an HTTP readiness probe every second) for the agent on the
// real containerd and reports, as test log lines: manifest written →
// Running latency p50/p99, and the agent's RSS and CPU over a steady
// window. NODEKIT_MEASURE_PODS (default 10) and NODEKIT_MEASURE_WINDOW
// (default 10s) set the size; the figure is 110 pods over 60s.
func TestMeasureAgent(t *testing.T) {
	cd := testenv.NeedContainerd(t)
	pods, window := 10, 10*time.Second
	if v := os.Getenv("NODEKIT_MEASURE_PODS"); v != "" {
		pods, _ = strconv.Atoi(v)
	}
	if v := os.Getenv("NODEKIT_MEASURE_WINDOW"); v != "" {
		window, _ = time.ParseDuration(v)
	}
	dir := t.TempDir()
	apiPort := freePorts(t, 1)[0]
	cgroupRoot := testenv.CgroupRoot + "/measure-" + rand.String(6)
	args := fmt.Sprintf("--runtime remote --container-runtime-endpoint %s --pod-manifest-path %s --hostname-override m "+
		"--pod-logs-dir %s --root-dir %s --port %d --healthz-port 0 --cgroup-root %s",
		cd.Endpoint, dir, t.TempDir(), t.TempDir(), apiPort, cgroupRoot)
	// NODEKIT_AGENT_BIN measures a built agent binary instead of this test
	// binary running main (whose RSS includes the test's own packages).
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), runAgentEnv+"=1", "NODEKIT_AGENT_ARGS="+args)
	if bin := os.Getenv("NODEKIT_AGENT_BIN"); bin != "" {
		cmd = exec.Command(bin, strings.Fields(args)...)
	}
	logFile, err := os.Create(filepath.Join(t.TempDir(), "agent.log"))
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	require.NoError(t, cmd.Start())
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		cg, err := cgroupmgr.New(cgroupmgr.Config{CgroupRoot: cgroupRoot})
		require.NoError(t, err)
		require.NoError(t, cg.Destroy(cg.KubepodsCgroupName()), "agent log: %s", logFile.Name())
	}()
	apiURL := fmt.Sprintf("http://127.0.0.1:%d/pods", apiPort)
	waitFor(t, 30*time.Second, func() bool { _, err := listPods(apiURL); return err == nil })

	ports := freePorts(t, pods)
	written := time.Now()
	for i, port := range ports {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("p%03d.yaml", i)), []byte(fmt.Sprintf(`apiVersion: v1
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
`, i, port, port)), 0o644))
	}
	runningAt := map[string]time.Duration{}
	waitFor(t, 3*time.Minute, func() bool {
		list, err := listPods(apiURL)
		if err != nil {
			return false
		}
		for _, p := range list.Items {
			if _, seen := runningAt[p.Name]; !seen && p.Status.Phase == v1.PodRunning {
				runningAt[p.Name] = time.Since(written)
			}
		}
		return len(runningAt) == pods
	})
	lat := make([]time.Duration, 0, pods)
	for _, d := range runningAt {
		lat = append(lat, d)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }

	cpu0 := procCPU(t, cmd.Process.Pid)
	time.Sleep(window) // the steady window being measured
	cpu := procCPU(t, cmd.Process.Pid) - cpu0
	rss := procRSS(t, cmd.Process.Pid)
	t.Logf("MEASURE pods=%d start p50=%v p99=%v all=%v; steady window=%v cpu=%.3f core rss=%.1f MiB",
		pods, pct(0.5).Round(time.Millisecond), pct(0.99).Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond),
		window, cpu.Seconds()/window.Seconds(), float64(rss)/(1<<20))

	for i := range ports {
		require.NoError(t, os.Remove(filepath.Join(dir, fmt.Sprintf("p%03d.yaml", i))))
	}
	waitFor(t, 3*time.Minute, func() bool { list, err := listPods(apiURL); return err == nil && len(list.Items) == 0 })
	// The agent forgets a pod once it has been killed and removed.
	waitFor(t, time.Minute, func() bool {
		b, _ := os.ReadFile(logFile.Name())
		return strings.Count(string(b), "pod terminated and removed") >= pods
	})
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

func freePorts(t *testing.T, n int) []int {
	var ls []net.Listener
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not reached within %v", d)
		}
		time.Sleep(100 * time.Millisecond)
	}
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

// procRSS is the process's resident set size in bytes.
func procRSS(t *testing.T, pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}
