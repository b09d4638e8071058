//go:build integration

package nodeagent_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/cgroupmgr"
	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/testenv"
	"github.com/nodekit-dev/nodekit/nodeagent"
)

// containerdConfig is the Config of an agent on containerd cd as node:
// its runtime client (closed when the test ends, after the agent), on
// this host, fresh root and log directories, the kubelet's default
// eviction thresholds and its metrics in a registry of its own; the
// other fields are the kubelet's defaults.
func containerdConfig(t testing.TB, cd testenv.Containerd, node string) nodeagent.Config {
	t.Helper()
	reg := prometheus.NewRegistry()
	return nodeagent.Config{NodeName: node, NodeIP: "127.0.0.1", RootDir: t.TempDir(), PodLogsDir: t.TempDir(),
		Runtime: cd.Dial(t), RuntimeOnHost: ptr.To(true), Eviction: &nodeagent.EvictionConfig{}, ContainersLogDir: t.TempDir(),
		FailCgroupV1: ptr.To(cgroupmgr.HostMode() == cgroupmgr.ModeV2), // run on v1 hosts too (TestFailCgroupV1)
		Registerer:   reg, Gatherer: reg}
}

// startContainerdAgent runs the agent cfg makes until stop or the test's
// end, whichever comes first.
func startContainerdAgent(t testing.TB, ctx context.Context, cfg nodeagent.Config) (a *nodeagent.Agent, stop func()) {
	t.Helper()
	a, err := nodeagent.New(ctx, cfg)
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); assert.NoError(t, <-done) }) }
	t.Cleanup(stop)
	return a, stop
}

// startPodsAgent runs an agent on containerd cd as node over the static
// pods of manifests (file name: content), with its own cgroup root, cfg
// edited by edit; when the test ends it stops and its pods and cgroups
// are removed.
func startPodsAgent(t *testing.T, ctx context.Context, cd testenv.Containerd, node string, manifests map[string]string,
	edit func(*nodeagent.Config)) (*nodeagent.Agent, nodeagent.Config) {
	t.Helper()
	dir := t.TempDir()
	for name, m := range manifests {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(m), 0o644))
	}
	cgroupRoot := testenv.CgroupRoot + "/agent-" + rand.String(6)
	cfg := containerdConfig(t, cd, node)
	cfg.ManifestPath, cfg.FileCheckFrequency, cfg.CgroupRoot = dir, 200*time.Millisecond, cgroupRoot
	if edit != nil {
		edit(&cfg)
	}
	a, stop := startContainerdAgent(t, ctx, cfg)
	t.Cleanup(func() {
		stop()
		for _, p := range a.Pods() {
			assert.NoError(t, a.Runtime().RemovePod(context.Background(), p.UID))
			assert.NoError(t, a.Cgroups().DestroyPodCgroup(&p))
		}
		cg, err := cgroupmgr.New(cgroupmgr.Config{CgroupRoot: cgroupRoot})
		require.NoError(t, err)
		assert.NoError(t, cg.Destroy(cg.KubepodsCgroupName()))
	})
	return a, cfg
}

// freePorts returns n loopback ports free a moment ago.
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

// TestAgentOnContainerd drives the agent only through manifests on disk:
// a host-network pod serving HTTP with an HTTP readiness probe becomes
// Running and Ready on the real containerd; a container exiting 1 is
// restarted; removing the manifests removes the pods from the runtime.
func TestAgentOnContainerd(t *testing.T) {
	cd := testenv.NeedContainerd(t)
	port := freePorts(t, 1)[0]

	dir, rootDir, hostDir := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "host")
	write := func(name, body string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	write("web.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: web}
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
    volumeMounts:
    - {name: mem, mountPath: /mem}
    - {name: host, mountPath: /host}
  volumes:
  - {name: mem, emptyDir: {medium: Memory}}
  - {name: host, hostPath: {path: %s, type: DirectoryOrCreate}}
`, port, port, hostDir))
	write("fail.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: fail}\nspec:\n  containers:\n  - {name: c, image: nodekit.local/testbin:1, imagePullPolicy: Never, args: [exit, \"1\"]}\n")

	cgroupRoot := testenv.CgroupRoot + "/agent-" + rand.String(6)
	cfg := containerdConfig(t, cd, "e2e")
	cfg.ManifestPath, cfg.RootDir, cfg.FileCheckFrequency, cfg.CgroupRoot = dir, rootDir, 200*time.Millisecond, cgroupRoot
	t.Cleanup(func() {
		cg, err := cgroupmgr.New(cgroupmgr.Config{CgroupRoot: cgroupRoot})
		require.NoError(t, err)
		assert.NoError(t, cg.Destroy(cg.KubepodsCgroupName()), "QoS cgroups removable: no pod left in them")
		for _, d := range []string{"cpu", "memory", "pids"} {
			_ = os.Remove(filepath.Join("/sys/fs/cgroup", d, cgroupRoot))
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, stop := startContainerdAgent(t, ctx, cfg)
	defer stop()

	pod := func(name string) *v1.Pod { return podNamed(a, name) }
	poll.Eventually(t, func() bool {
		p := pod("web-e2e")
		return p != nil && p.Status.Phase == v1.PodRunning && p.Status.ContainerStatuses[0].Ready
	}, 20*time.Second, 20*time.Millisecond, "web Running and Ready")
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", port))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "containerd", a.RuntimeName())
	web := pod("web-e2e")
	podCgroup := filepath.Join("/sys/fs/cgroup/memory", cgroupRoot, "kubepods/besteffort/pod"+string(web.UID))
	assert.DirExists(t, podCgroup, "the pod runs in its QoS-class pod cgroup")
	memVolume := filepath.Join(rootDir, "pods", string(web.UID), "volumes/kubernetes.io~empty-dir/mem")
	assert.True(t, isTmpfsMount(memVolume), "memory emptyDir is a tmpfs of its own")
	assert.DirExists(t, hostDir, "hostPath DirectoryOrCreate created")

	sum, err := a.Summary().Summary(ctx)
	require.NoError(t, err)
	var found bool
	for _, ps := range sum.Pods {
		if ps.PodRef.Name == "web-e2e" {
			found = true
			require.Len(t, ps.Containers, 1)
			assert.Equal(t, "srv", ps.Containers[0].Name)
			require.NotNil(t, ps.Memory.WorkingSetBytes)
			assert.NotZero(t, *ps.Memory.WorkingSetBytes, "pod working set from its cgroup")
			assert.NotZero(t, *ps.CPU.UsageCoreNanoSeconds)
		}
	}
	assert.True(t, found, "stats/summary has the pod")
	require.NotNil(t, sum.Node.Memory, "node stats from the kubepods cgroup")

	poll.Eventually(t, func() bool {
		p := pod("fail-e2e")
		return p != nil && p.Status.ContainerStatuses[0].RestartCount >= 1 &&
			p.Status.ContainerStatuses[0].LastTerminationState.Terminated != nil &&
			p.Status.ContainerStatuses[0].LastTerminationState.Terminated.ExitCode == 1
	}, 20*time.Second, 20*time.Millisecond, "failing container restarted")

	require.NoError(t, os.Remove(filepath.Join(dir, "web.yaml")))
	require.NoError(t, os.Remove(filepath.Join(dir, "fail.yaml")))
	poll.Eventually(t, func() bool {
		pods, err := a.Runtime().GetPods(ctx, true)
		require.NoError(t, err)
		for _, p := range pods {
			if p.Name == "web-e2e" || p.Name == "fail-e2e" {
				return false
			}
		}
		return true
	}, 20*time.Second, 20*time.Millisecond, "pods removed from containerd")
	poll.Eventually(t, func() bool {
		_, err := os.Stat(podCgroup)
		_, verr := os.Stat(filepath.Join(rootDir, "pods", string(web.UID)))
		return os.IsNotExist(err) && os.IsNotExist(verr)
	}, 20*time.Second, 20*time.Millisecond, "pod cgroup and volumes removed")
}

// TestAgentSurvivesContainerdRestart: with its own containerd stopped for 30s,
// the agent reports unhealthy; once containerd is back it is healthy
// again and every pod is reconciled without duplicates.
func TestAgentSurvivesContainerdRestart(t *testing.T) {
	cd := testenv.PrivateContainerd(t, "agent-restart")
	dir := t.TempDir()
	for _, name := range []string{"a", "b"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(
			"apiVersion: v1\nkind: Pod\nmetadata: {name: "+name+"}\nspec:\n  containers:\n  - {name: c, image: nodekit.local/testbin:1, imagePullPolicy: Never, args: [sleep]}\n"), 0o644))
	}
	cgroupRoot := testenv.CgroupRoot + "/agent-" + rand.String(6)
	cfg := containerdConfig(t, cd, "rs")
	cfg.ManifestPath, cfg.CgroupRoot = dir, cgroupRoot
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	a, stop := startContainerdAgent(t, ctx, cfg)
	defer func() {
		stop()
		for _, p := range a.Pods() {
			assert.NoError(t, a.Runtime().RemovePod(context.Background(), p.UID))
			assert.NoError(t, a.Cgroups().DestroyPodCgroup(&p))
		}
		cg, err := cgroupmgr.New(cgroupmgr.Config{CgroupRoot: cgroupRoot})
		require.NoError(t, err)
		assert.NoError(t, cg.Destroy(cg.KubepodsCgroupName()))
	}()

	running := func() bool {
		ps := a.Pods()
		if len(ps) != 2 {
			return false
		}
		for _, p := range ps {
			if p.Status.Phase != v1.PodRunning {
				return false
			}
		}
		return true
	}
	poll.Eventually(t, running, 20*time.Second, 20*time.Millisecond, "both pods running")
	require.NoError(t, healthz(a))

	cd.Kill(t)
	poll.Eventually(t, func() bool { return healthz(a) != nil }, 20*time.Second, 20*time.Millisecond, "unhealthy while containerd is down")
	time.Sleep(30 * time.Second) // the outage: 30 relists fail
	assert.Error(t, healthz(a))
	cd.Start(t)

	poll.Eventually(t, func() bool { return healthz(a) == nil }, 20*time.Second, 20*time.Millisecond, "healthy again")
	poll.Eventually(t, running, 20*time.Second, 20*time.Millisecond, "pods reconciled")
	pods, err := a.Runtime().GetPods(ctx, true)
	require.NoError(t, err)
	require.Len(t, pods, 2)
	for _, p := range pods {
		assert.Len(t, p.Sandboxes, 1, "pod %s: no duplicate sandbox", p.Name)
		assert.Len(t, p.Containers, 1, "pod %s: no duplicate container", p.Name)
	}
}

// isTmpfsMount: dir is a tmpfs mounted on its own (another device than its
// parent's, which may be a tmpfs too).
func isTmpfsMount(dir string) bool {
	var fs unix.Statfs_t
	var st, parent unix.Stat_t
	return unix.Statfs(dir, &fs) == nil && fs.Type == unix.TMPFS_MAGIC &&
		unix.Stat(dir, &st) == nil && unix.Stat(filepath.Dir(dir), &parent) == nil && st.Dev != parent.Dev
}

// healthz is the agent's /healthz answer: nil when it says ok.
func healthz(a *nodeagent.Agent) error {
	rec := httptest.NewRecorder()
	a.APIHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != http.StatusOK {
		return fmt.Errorf("healthz %d: %s", rec.Code, rec.Body)
	}
	return nil
}
