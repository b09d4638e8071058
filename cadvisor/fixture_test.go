package cadvisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeRuntime lists fixed sandboxes and containers.
type fakeRuntime struct {
	sandboxes  []*runtimeapi.PodSandbox
	containers []*runtimeapi.Container
	err        error
}

func (f *fakeRuntime) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return f.sandboxes, f.err
}

func (f *fakeRuntime) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	return f.containers, f.err
}

// addPod adds a running pod with a sandbox and one container "app".
func (f *fakeRuntime) addPod(name, uid, sandboxID, containerID string) {
	f.sandboxes = append(f.sandboxes, &runtimeapi.PodSandbox{Id: sandboxID, CreatedAt: 1e18,
		Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: uid},
		State:    runtimeapi.PodSandboxState_SANDBOX_READY})
	f.containers = append(f.containers, &runtimeapi.Container{Id: containerID, PodSandboxId: sandboxID, CreatedAt: 1e18,
		Image:  &runtimeapi.ImageSpec{Image: "sha256:abc", UserSpecifiedImage: "busybox:1.36"},
		State:  runtimeapi.ContainerState_CONTAINER_RUNNING,
		Labels: map[string]string{podNameLabel: name, podNamespaceLabel: "default", containerNameLabel: "app"}})
}

// cgroupTree writes cgroup files under a fake mount root: for v1 each
// file goes to its controller's hierarchy (the part of its name before
// the dot; cpu.stat and cpu.* to cpu, cpuacct.* to cpuacct).
type cgroupTree struct {
	t    testing.TB
	root string
	v2   bool
}

func (c cgroupTree) write(cgroup string, files map[string]string) {
	c.t.Helper()
	for name, content := range files {
		dir := filepath.Join(c.root, cgroup)
		if !c.v2 {
			ctrl := name[:indexDot(name)]
			if ctrl == "cgroup" {
				ctrl = "memory"
			}
			dir = filepath.Join(c.root, ctrl, cgroup)
		}
		require.NoError(c.t, os.MkdirAll(dir, 0o755))
		require.NoError(c.t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
}

func indexDot(s string) int {
	for i := range s {
		if s[i] == '.' {
			return i
		}
	}
	return len(s)
}

// v1Container are a container's v1 files: 2.5 s of CPU, 300 MiB used of
// which 100 MiB inactive file, a 50m CPU quota.
func v1Container() map[string]string {
	return map[string]string{
		"cpuacct.usage":               "2500000000\n",
		"cpuacct.stat":                "user 150\nsystem 100\n",
		"cpu.stat":                    "nr_periods 40\nnr_throttled 10\nthrottled_time 500000000\n",
		"cpu.shares":                  "51\n",
		"cpu.cfs_period_us":           "100000\n",
		"cpu.cfs_quota_us":            "5000\n",
		"memory.usage_in_bytes":       fmt.Sprint(300 << 20),
		"memory.max_usage_in_bytes":   fmt.Sprint(310 << 20),
		"memory.failcnt":              "3\n",
		"memory.limit_in_bytes":       fmt.Sprint(512 << 20),
		"memory.memsw.limit_in_bytes": "9223372036854771712\n",
		"memory.soft_limit_in_bytes":  "9223372036854771712\n",
		"memory.kmem.usage_in_bytes":  "4096\n",
		"memory.stat": "cache 1\nrss 2\ntotal_cache 104857600\ntotal_rss 209715200\ntotal_swap 0\ntotal_mapped_file 8192\n" +
			"total_inactive_file 104857600\ntotal_active_file 0\npgfault 7\npgmajfault 1\ntotal_pgfault 70\ntotal_pgmajfault 10\n",
		"blkio.throttle.io_service_bytes_recursive": "7:0 Read 4096\n7:0 Write 8192\n7:0 Total 12288\nTotal 12288\n",
		"blkio.throttle.io_serviced_recursive":      "7:0 Read 1\n7:0 Write 2\n7:0 Total 3\nTotal 3\n",
		"pids.current":                              "3\n",
		"pids.max":                                  "max\n",
		"cgroup.procs":                              "",
	}
}

// v2Container are the same figures in cgroup v2's files.
func v2Container() map[string]string {
	return map[string]string{
		"cpu.stat":            "usage_usec 2500000\nuser_usec 1500000\nsystem_usec 1000000\nnr_periods 40\nnr_throttled 10\nthrottled_usec 500000\n",
		"cpu.weight":          "2\n",
		"cpu.max":             "5000 100000\n",
		"memory.current":      fmt.Sprint(300 << 20),
		"memory.peak":         fmt.Sprint(310 << 20),
		"memory.max":          fmt.Sprint(512 << 20),
		"memory.min":          "0\n",
		"memory.swap.max":     "max\n",
		"memory.swap.current": "0\n",
		"memory.events":       "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n",
		"memory.stat": "anon 209715200\nfile 104857600\nfile_mapped 8192\ninactive_file 104857600\nactive_file 0\npgfault 70\npgmajfault 10\n" +
			"pgscan 5\npgsteal 4\nworkingset_refault_anon 1\nworkingset_refault_file 2\n",
		"io.stat":      "7:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n",
		"cpu.pressure": "some avg10=0.00 avg60=0.00 avg300=0.00 total=1500000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=500000\n",
		"pids.current": "3\n",
		"pids.max":     "max\n",
		"cgroup.procs": "",
	}
}
