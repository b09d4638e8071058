//go:build integration

package kuberuntime_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/testenv"
	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/runtime"
)

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func newContainerdManager(t *testing.T, backoff *kuberuntime.Backoff) (*kuberuntime.Manager, *runtime.Client) {
	cd := testenv.NeedContainerd(t)
	client := cd.Dial(t)
	m, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: client, PodLogsDir: t.TempDir(), BackOff: backoff})
	require.NoError(t, err)
	return m, client
}

func cleanupPod(t *testing.T, m *kuberuntime.Manager, client *runtime.Client, uid types.UID) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, m.RemovePod(ctx, uid))
		testenv.RemovePodCgroup(t, string(uid))
	})
}

// TestSyncPodOnContainerd: a serving container and one that exits 3 under
// restartPolicy OnFailure. The sandbox runs, the server answers on loopback,
// the failing container restarts with growing back-off, KillPod stops
// everything within the grace period and nothing is left afterwards.
func TestSyncPodOnContainerd(t *testing.T) {
	backoff := kuberuntime.NewBackoff(nil, 500*time.Millisecond, 4*time.Second)
	m, client := newContainerdManager(t, backoff)
	ctx := context.Background()
	port := freePort(t)
	grace := int64(10)
	uid := types.UID("sync-" + rand.String(8))
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sync", Namespace: "default", UID: uid},
		Spec: v1.PodSpec{
			HostNetwork:                   true,
			RestartPolicy:                 v1.RestartPolicyOnFailure,
			TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{
				{Name: "web", Image: testenv.TestImage, Args: []string{"serve"},
					Env: []v1.EnvVar{{Name: "PORT", Value: strconv.Itoa(port)}}, ImagePullPolicy: v1.PullNever},
				{Name: "fail", Image: testenv.TestImage, Args: []string{"exit", "3"}, ImagePullPolicy: v1.PullNever},
			},
		},
	}
	cleanupPod(t, m, client, uid)

	// Act as a pod worker: read the status, sync, repeat. Each restart's
	// wait runs from the previous instance's exit, as the back-off does:
	// how long the container took to exit is not part of it.
	var waits []time.Duration
	starts := 0
	poll.Eventually(t, func() bool {
		status, err := m.GetPodStatus(ctx, uid, pod.Name, pod.Namespace)
		require.NoError(t, err)
		prev := status.FindContainerStatusByName("fail") // the newest instance
		res := m.SyncPod(ctx, pod, status, kuberuntime.SyncOptions{CgroupParent: testenv.CgroupParent(string(uid))})
		for _, s := range res.Steps {
			if s.Err != nil {
				require.ErrorIs(t, s.Err, kuberuntime.ErrCrashLoopBackOff, "only back-off may fail: %s", res)
				assert.Equal(t, "CrashLoopBackOff", s.Reason())
			}
			if s.Action == kuberuntime.ActionStartContainer && s.Target == "fail" && s.Err == nil {
				starts++
				if prev != nil && prev.State == kc.ContainerStateExited {
					waits = append(waits, time.Since(prev.FinishedAt))
				}
			}
		}
		return starts >= 4
	}, 40*time.Second, 100*time.Millisecond, "the failing container restarted three times")
	require.Len(t, waits, 3, "the failing container is restarted three times after exits")
	t.Logf("restart waits after the exits: %v", waits)
	// First restart is immediate (after the exit), then 0.5s, 1s, 2s back-off:
	// never sooner; load only makes a wait longer.
	assert.GreaterOrEqual(t, waits[1], 500*time.Millisecond, "back-off before the second restart")
	assert.GreaterOrEqual(t, waits[2], time.Second, "back-off grows")

	status, err := m.GetPodStatus(ctx, uid, pod.Name, pod.Namespace)
	require.NoError(t, err)
	require.Len(t, status.SandboxStatuses, 1)
	assert.Equal(t, kc.SandboxStateReady, status.SandboxStatuses[0].State)
	web := status.FindContainerStatusByName("web")
	require.NotNil(t, web)
	assert.Equal(t, kc.ContainerStateRunning, web.State)
	assert.Equal(t, 0, web.RestartCount)
	fail := status.FindContainerStatusByName("fail")
	require.NotNil(t, fail)
	assert.GreaterOrEqual(t, fail.RestartCount, 3)
	assert.Equal(t, kc.HashContainer(&pod.Spec.Containers[1]), fail.Hash)

	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", port))
	require.NoError(t, err, "the server answers on loopback")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "ok", string(body))

	start := time.Now()
	require.NoError(t, m.KillPod(ctx, pod, kuberuntime.PodFromStatus(status), nil))
	assert.Less(t, time.Since(start), time.Duration(grace)*time.Second, "stopped within the grace period")
	status, err = m.GetPodStatus(ctx, uid, pod.Name, pod.Namespace)
	require.NoError(t, err)
	assert.Equal(t, kc.SandboxStateNotReady, status.SandboxStatuses[0].State)
	assert.Empty(t, status.RunningContainers())
	assert.Equal(t, 0, status.FindContainerStatusByName("web").ExitCode, "web exited on SIGTERM")

	require.NoError(t, m.RemovePod(ctx, uid))
	pods, err := m.GetPods(ctx, true)
	require.NoError(t, err)
	for _, p := range pods {
		assert.NotEqual(t, uid, p.ID, "pod left in the runtime")
	}
	testenv.RemovePodCgroup(t, string(uid))
}

// TestSyncPodBadInputOnContainerd: containers the runtime can't honour fail
// with errors naming the pod, container and field; the good one runs.
func TestSyncPodBadInputOnContainerd(t *testing.T) {
	m, client := newContainerdManager(t, nil)
	ctx := context.Background()
	uid := types.UID("bad-" + rand.String(8))
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: "default", UID: uid},
		Spec: v1.PodSpec{Containers: []v1.Container{
			{Name: "good", Image: testenv.TestImage, Args: []string{"sleep"}},
			{Name: "noimage", Image: "nodekit.local/absent:1", ImagePullPolicy: v1.PullNever},
			{Name: "badport", Image: testenv.TestImage, Args: []string{"sleep"}, Ports: []v1.ContainerPort{{ContainerPort: 70000}}},
		}},
	}
	cleanupPod(t, m, client, uid)
	res := m.SyncPod(ctx, pod, nil, kuberuntime.SyncOptions{CgroupParent: testenv.CgroupParent(string(uid))})
	errs := map[string]kuberuntime.SyncStep{}
	for _, s := range res.Steps {
		errs[s.Target] = s
	}
	assert.NoError(t, errs["good"].Err)
	assert.True(t, errors.Is(errs["noimage"].Err, kuberuntime.ErrImageNeverPull), "%v", errs["noimage"].Err)
	assert.Contains(t, errs["noimage"].Message, `pod default/bad: container noimage: Container image "nodekit.local/absent:1" is not present with pull policy of Never`)
	assert.Equal(t, "ErrImageNeverPull", errs["noimage"].Reason())
	assert.True(t, errors.Is(errs["badport"].Err, kuberuntime.ErrCreateConfig), "%v", errs["badport"].Err)
	assert.Contains(t, errs["badport"].Message, "pod default/bad: container badport: ports[0].containerPort: Invalid value: 70000")

	status, err := m.GetPodStatus(ctx, uid, pod.Name, pod.Namespace)
	require.NoError(t, err)
	good := status.FindContainerStatusByName("good")
	require.NotNil(t, good)
	assert.Equal(t, kc.ContainerStateRunning, good.State)
	assert.Nil(t, status.FindContainerStatusByName("noimage"))
	zero := int64(0)
	require.NoError(t, m.KillPod(ctx, pod, kuberuntime.PodFromStatus(status), &zero))
}

// TestSessionsOnContainerd: exec, attach, port-forward and run through
// containerd's own streaming server, from the URLs the Manager returns.
func TestSessionsOnContainerd(t *testing.T) {
	cd := testenv.NeedContainerd(t)
	client := cd.Dial(t)
	m, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: client, Streaming: client, PodLogsDir: t.TempDir()})
	require.NoError(t, err)
	uidCgroup := "sessions-" + rand.String(6)
	t.Cleanup(func() { testenv.RemovePodCgroup(t, uidCgroup) })
	checkSessions(t, m, kuberuntime.SyncOptions{CgroupParent: testenv.CgroupParent(uidCgroup)})
}
