//go:build integration

package kuberuntime_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/nodekit-dev/nodekit/internal/testenv"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/runtime"
)

// actuatedState is a ResizeState in memory.
type actuatedState struct {
	mu sync.Mutex
	m  map[string]v1.ResourceRequirements
}

func (s *actuatedState) Actuated(uid types.UID, c string) (v1.ResourceRequirements, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.m[string(uid)+"/"+c]
	return r, ok
}

func (s *actuatedState) SetActuated(uid types.UID, c string, r v1.ResourceRequirements) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[string(uid)+"/"+c] = r
	return nil
}

func resourcesOf(cpuReq, cpuLim, memReq, memLim string) v1.ResourceRequirements {
	return v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpuReq), v1.ResourceMemory: resource.MustParse(memReq)},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpuLim), v1.ResourceMemory: resource.MustParse(memLim)}}
}

// cgroupLimits reads a running container's CFS quota (per 100ms period)
// and memory limit from inside it, as the e2e resize specs do.
func cgroupLimits(t *testing.T, client *runtime.Client, id string) (quota, memory int64) {
	read := func(paths ...string) string {
		for _, p := range paths {
			res, err := client.ExecSyncCmd(context.Background(), id, []string{"/testbin", "read", p}, 10*time.Second)
			if err == nil && res.ExitCode == 0 {
				out := res.Stdout
				return strings.TrimSpace(string(out))
			}
		}
		t.Fatalf("container %s: none of %v readable", id, paths)
		return ""
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil { // v2
		q := strings.Fields(read("/sys/fs/cgroup/cpu.max"))
		quota, _ = strconv.ParseInt(q[0], 10, 64)
		memory, _ = strconv.ParseInt(read("/sys/fs/cgroup/memory.max"), 10, 64)
		return quota, memory
	}
	quota, _ = strconv.ParseInt(read("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us"), 10, 64)
	memory, _ = strconv.ParseInt(read("/sys/fs/cgroup/memory/memory.limit_in_bytes"), 10, 64)
	return quota, memory
}

// TestResizeInPlaceOnContainerd: on real containerd and runc, a container
// resized with the default policy keeps running (same ID) with its new CFS
// quota and memory limit in its cgroup, up and down; a container whose
// memory resizePolicy is RestartContainer is restarted with its new limit.
func TestResizeInPlaceOnContainerd(t *testing.T) {
	m, client := newContainerdManager(t, nil)
	ctx := context.Background()
	uid := types.UID("resize-" + rand.String(8))
	restart := []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "resize", Namespace: "default", UID: uid},
		Spec: v1.PodSpec{HostNetwork: true, TerminationGracePeriodSeconds: new(int64), Containers: []v1.Container{
			{Name: "inplace", Image: testenv.TestImage, Args: []string{"sleep"}, ImagePullPolicy: v1.PullNever,
				Resources: resourcesOf("100m", "200m", "64Mi", "128Mi")},
			{Name: "restart", Image: testenv.TestImage, Args: []string{"sleep"}, ImagePullPolicy: v1.PullNever,
				Resources: resourcesOf("100m", "200m", "64Mi", "128Mi"), ResizePolicy: restart},
		}}}
	cleanupPod(t, m, client, uid)
	state := &actuatedState{m: map[string]v1.ResourceRequirements{}}
	sync := func() *kc.PodStatus {
		st, err := m.GetPodStatus(ctx, uid, pod.Name, pod.Namespace)
		require.NoError(t, err)
		require.NoError(t, m.SyncPod(ctx, pod, st, kuberuntime.SyncOptions{Resize: state}).Err())
		st, err = m.GetPodStatus(ctx, uid, pod.Name, pod.Namespace)
		require.NoError(t, err)
		return st
	}
	running := func(st *kc.PodStatus, name string) *kc.ContainerStatus {
		for _, cs := range st.ContainerStatuses {
			if cs.Name == name && cs.State == kc.ContainerStateRunning {
				return cs
			}
		}
		t.Fatalf("container %s not running", name)
		return nil
	}
	st := sync()
	inplace, restarted := running(st, "inplace"), running(st, "restart")
	q, mem := cgroupLimits(t, client, inplace.ID)
	assert.Equal(t, []int64{20000, 128 << 20}, []int64{q, mem}, "as created")
	assert.False(t, kuberuntime.ResizeInProgress(pod, st, state))

	for _, step := range []struct {
		name             string
		inplace, restart v1.ResourceRequirements
		wantQuota        int64
		wantMemory       int64
	}{
		{"cpu up, memory down", resourcesOf("150m", "300m", "48Mi", "96Mi"), resourcesOf("100m", "200m", "64Mi", "192Mi"), 30000, 96 << 20},
		{"cpu down, memory up", resourcesOf("50m", "100m", "64Mi", "160Mi"), resourcesOf("100m", "200m", "64Mi", "192Mi"), 10000, 160 << 20},
	} {
		pod.Spec.Containers[0].Resources, pod.Spec.Containers[1].Resources = step.inplace, step.restart
		require.True(t, kuberuntime.ResizeInProgress(pod, st, state), step.name)
		st = sync()
		assert.False(t, kuberuntime.ResizeInProgress(pod, st, state), step.name)
		now := running(st, "inplace")
		assert.Equal(t, inplace.ID, now.ID, "%s: resized in place, not restarted", step.name)
		q, mem := cgroupLimits(t, client, now.ID)
		assert.Equal(t, []int64{step.wantQuota, step.wantMemory}, []int64{q, mem}, step.name)
		require.NotNil(t, now.Resources, "containerd reports the resources")
		assert.Equal(t, step.inplace.Limits.Cpu().MilliValue(), now.Resources.CPULimitMilli, step.name)
		assert.Equal(t, step.inplace.Limits.Memory().Value(), now.Resources.MemoryLimitBytes, step.name)
	}
	now := running(st, "restart")
	assert.NotEqual(t, restarted.ID, now.ID, "the RestartContainer policy restarted it")
	assert.Equal(t, 1, now.RestartCount, "once: the second step left its resources alone")
	_, mem = cgroupLimits(t, client, now.ID)
	assert.Equal(t, int64(192<<20), mem)
}
