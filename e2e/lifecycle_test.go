//go:build integration

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit-dev/nodekit/cgroupmgr"
	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/testenv"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/nodeagent"
	"github.com/nodekit-dev/nodekit/runtime"
)

// TestAgentLifecycleOnContainerd drives a separately running agent on the
// real containerd only through manifests on disk and its HTTP API: a pod
// with an HTTP readiness and liveness probe becomes Running and Ready; a
// failing liveness probe restarts its container; a container exiting 1 is
// restarted with back-off; the agent killed with SIGKILL and started again
// adopts its running pods without restarting them, and kills the pod whose
// manifest was deleted meanwhile; an edited manifest replaces the pod, whose
// container then has a new hash; deleting the manifests removes the pods,
// their cgroups, their volumes and their log directories.
func TestAgentLifecycleOnContainerd(t *testing.T) {
	cd := testenv.NeedContainerd(t)
	ports := freePorts(t, 3)
	webPort, apiPort, healthzPort := ports[0], ports[1], ports[2]
	dir, rootDir := t.TempDir(), t.TempDir()
	write := func(name, body string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	web := func(version string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 5
  containers:
  - name: srv
    image: nodekit.local/testbin:1
    imagePullPolicy: Never
    args: [serve]
    env: [{name: PORT, value: "%d"}, {name: VERSION, value: "%s"}]
    readinessProbe:
      httpGet: {path: /readyz, port: %d}
      periodSeconds: 1
    livenessProbe:
      httpGet: {path: /healthz, port: %d}
      periodSeconds: 1
      failureThreshold: 2
    volumeMounts: [{name: scratch, mountPath: /scratch}]
  volumes: [{name: scratch, emptyDir: {}}]
`, webPort, version, webPort, webPort)
	}
	write("web.yaml", web("1"))
	write("crash.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: crash}\nspec:\n  containers:\n  - {name: c, image: nodekit.local/testbin:1, imagePullPolicy: Never, args: [exit, \"1\"]}\n")
	write("keep.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: keep}\nspec:\n  containers:\n  - {name: c, image: nodekit.local/testbin:1, imagePullPolicy: Never, args: [sleep]}\n")

	cgroupRoot := testenv.CgroupRoot + "/lifecycle-" + rand.String(6)
	podLogsDir := t.TempDir()
	agent := &agentProcess{t: t, bin: buildAgent(t, t.TempDir()), logPath: filepath.Join(t.TempDir(), "agent.log"), healthz: healthzPort,
		args: func(nodeIP string) []string {
			return strings.Fields(fmt.Sprintf("--runtime remote --container-runtime-endpoint %s --pod-manifest-path %s --hostname-override lc "+
				"--node-ip %s --pod-logs-dir %s --root-dir %s --port 0 --address 127.0.0.1 --read-only-port %d --healthz-port %d "+
				"--cgroup-root %s --file-check-frequency 1s", cd.Endpoint, dir, nodeIP, podLogsDir, rootDir, apiPort, healthzPort, cgroupRoot))
		}}
	cri := cd.Dial(t)
	t.Cleanup(func() {
		agent.stop(syscall.SIGTERM)
		if t.Failed() {
			t.Logf("agent log:\n%s", agent.logText())
		}
		// Whatever a failed run left: remove this agent's pods, then the cgroups.
		ctx := context.Background()
		sbs, _ := cri.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{nodeagent.NodeLabel: "lc"}})
		for _, s := range sbs {
			_ = cri.StopPodSandbox(ctx, s.Id)
			_ = cri.RemovePodSandbox(ctx, s.Id)
		}
		cg, err := cgroupmgr.New(cgroupmgr.Config{CgroupRoot: cgroupRoot})
		require.NoError(t, err)
		assert.NoError(t, cg.Destroy(cg.KubepodsCgroupName()), "QoS cgroups removable: no pod left in them")
	})
	agent.start("127.0.0.1")

	apiURL := fmt.Sprintf("http://127.0.0.1:%d/pods", apiPort)
	pod := func(name string) *v1.Pod {
		list, err := listPods(apiURL)
		if err != nil {
			return nil
		}
		for i := range list.Items {
			if list.Items[i].Name == name {
				return &list.Items[i]
			}
		}
		return nil
	}
	container := func(p *v1.Pod) *v1.ContainerStatus {
		if p == nil || len(p.Status.ContainerStatuses) != 1 {
			return nil
		}
		return &p.Status.ContainerStatuses[0]
	}
	ready := func(name string) func() bool {
		return func() bool {
			c := container(pod(name))
			return c != nil && c.State.Running != nil && c.Ready
		}
	}
	poll.Eventually(t, ready("web-lc"), time.Minute, 100*time.Millisecond)
	poll.Eventually(t, func() bool { c := container(pod("keep-lc")); return c != nil && c.State.Running != nil }, 30*time.Second, 100*time.Millisecond)
	first := container(pod("web-lc")).ContainerID

	// Liveness: /healthz starts failing; after failureThreshold (2) probes
	// the container is killed and started again, fresh and healthy.
	get(t, fmt.Sprintf("http://127.0.0.1:%d/healthz/fail", webPort))
	poll.Eventually(t, func() bool {
		c := container(pod("web-lc"))
		return c != nil && c.RestartCount == 1 && c.ContainerID != first && c.State.Running != nil && c.Ready &&
			c.LastTerminationState.Terminated != nil
	}, 30*time.Second, 100*time.Millisecond)

	// Back-off: the crashing container is restarted at once, then after the
	// kubelet's 10s back-off, waiting in CrashLoopBackOff meanwhile.
	var sawBackOff bool
	poll.Eventually(t, func() bool {
		c := container(pod("crash-lc"))
		if c == nil {
			return false
		}
		if c.State.Waiting != nil && c.State.Waiting.Reason == "CrashLoopBackOff" {
			sawBackOff = true
		}
		return c.RestartCount >= 2 && sawBackOff
	}, 45*time.Second, 100*time.Millisecond)
	last := container(pod("crash-lc")).LastTerminationState.Terminated
	require.NotNil(t, last)
	assert.Equal(t, int32(1), last.ExitCode)

	// The agent dies (SIGKILL: no clean-up of any kind); keep.yaml is
	// deleted while it is down. The new agent adopts web as it is and kills
	// the orphaned keep pod.
	before := container(pod("web-lc"))
	webUID := pod("web-lc").UID
	keepUID := pod("keep-lc").UID
	agent.stop(syscall.SIGKILL)
	require.NoError(t, os.Remove(filepath.Join(dir, "keep.yaml")))
	agent.start("127.0.0.1")
	poll.Eventually(t, ready("web-lc"), 30*time.Second, 100*time.Millisecond)
	after := container(pod("web-lc"))
	assert.Equal(t, before.ContainerID, after.ContainerID, "web's container adopted, not restarted")
	assert.Equal(t, before.RestartCount, after.RestartCount)
	assert.Equal(t, before.State.Running.StartedAt, after.State.Running.StartedAt)
	runtimePod := func(uid types.UID) *kc.Pod {
		sbs, err := cri.ListPodSandbox(context.Background(), &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{kc.LabelPodUID: string(uid)}})
		require.NoError(t, err)
		cs, err := cri.ListContainers(context.Background(), &runtimeapi.ContainerFilter{LabelSelector: map[string]string{kc.LabelPodUID: string(uid)}})
		require.NoError(t, err)
		for _, p := range kuberuntime.GroupPods(sbs, cs) {
			return p
		}
		return nil
	}
	poll.Eventually(t, func() bool { return runtimePod(keepUID) == nil }, 30*time.Second, 100*time.Millisecond)
	// The runtime forgets the pod a moment before the agent logs that it
	// has finished with it: wait for the line rather than race it.
	poll.Eventually(t, func() bool { return strings.Contains(agent.logText(), "orphaned pod killed and removed") }, 10*time.Second, 100*time.Millisecond)
	wp := runtimePod(webUID)
	require.NotNil(t, wp)
	assert.Len(t, wp.Sandboxes, 1, "no second sandbox after the restart")
	assert.Len(t, wp.Containers, 2, "the first container (exited) and the one running since the liveness restart")

	// Editing the manifest gives the static pod a new UID: the old pod is
	// killed first (same name, same host port), then the new one runs a new
	// container with the new environment. Its hash label is the kubelet's
	// (name and image only, since Kubernetes 1.31), so unchanged by an env
	// edit: what replaces the container is the new UID.
	oldContainer := running(t, wp)
	write("web.yaml", web("2"))
	poll.Eventually(t, func() bool { p := pod("web-lc"); return p != nil && p.UID != webUID && ready("web-lc")() }, time.Minute, 100*time.Millisecond)
	poll.Eventually(t, func() bool { return runtimePod(webUID) == nil }, 30*time.Second, 100*time.Millisecond)
	newPod := runtimePod(pod("web-lc").UID)
	require.NotNil(t, newPod)
	newContainer := running(t, newPod)
	assert.NotEqual(t, oldContainer.ID, newContainer.ID, "a new container")
	assert.Equal(t, kc.HashContainer(&v1.Container{Name: "srv", Image: "nodekit.local/testbin:1"}), newContainer.Hash)
	assert.Contains(t, containerEnv(t, cri, newContainer.ID), "VERSION=2")

	// Deleting the manifests removes the pods, their cgroups, volumes and logs.
	newUID := newPod.ID
	require.NoError(t, os.Remove(filepath.Join(dir, "web.yaml")))
	require.NoError(t, os.Remove(filepath.Join(dir, "crash.yaml")))
	poll.Eventually(t, func() bool { list, err := listPods(apiURL); return err == nil && len(list.Items) == 0 }, time.Minute, 100*time.Millisecond)
	poll.Eventually(t, func() bool {
		sbs, err := cri.ListPodSandbox(context.Background(), &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{nodeagent.NodeLabel: "lc"}})
		require.NoError(t, err)
		return len(sbs) == 0
	}, 30*time.Second, 100*time.Millisecond)
	poll.Eventually(t, func() bool {
		_, cgErr := os.Stat(filepath.Join("/sys/fs/cgroup/memory", cgroupRoot, "kubepods/besteffort/pod"+string(newUID)))
		_, volErr := os.Stat(filepath.Join(rootDir, "pods", string(newUID)))
		return os.IsNotExist(cgErr) && os.IsNotExist(volErr)
	}, 30*time.Second, 100*time.Millisecond)
	// Every pod of this run is gone (old versions and the orphan too), so
	// are their log directories: containerd leaves them to the kubelet.
	poll.Eventually(t, func() bool { left, err := os.ReadDir(podLogsDir); return err == nil && len(left) == 0 }, 30*time.Second, 100*time.Millisecond)
}

// running is p's running container.
func running(t *testing.T, p *kc.Pod) *kc.Container {
	t.Helper()
	for _, c := range p.Containers {
		if c.State == kc.ContainerStateRunning {
			return c
		}
	}
	t.Fatalf("pod %s has no running container", p.Name)
	return nil
}

// containerEnv reads a running container's environment from its process,
// found through containerd's verbose status ({"pid": N, ...}).
func containerEnv(t *testing.T, cri *runtime.Client, id string) []string {
	t.Helper()
	resp, err := cri.ContainerStatus(context.Background(), id, true)
	require.NoError(t, err)
	var info struct{ Pid int }
	require.NoError(t, json.Unmarshal([]byte(resp.Info["info"]), &info), "verbose info: %q", resp.Info["info"])
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", info.Pid))
	require.NoError(t, err)
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

func get(t *testing.T, url string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, url)
}
