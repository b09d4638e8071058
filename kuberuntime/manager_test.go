package kuberuntime_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/testenv"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

const (
	testImage  = "nodekit.local/testbin:1"
	pauseImage = "nodekit.local/pause:1"
)

// startFake serves a fresh fake runtime with the test images and dials it.
func startFake(t testing.TB, opts ...fake.Option) (*fake.Runtime, *runtime.Client) {
	return testenv.StartFake(t, opts...)
}

type managerEnv struct {
	t      *testing.T
	clock  *clocktesting.FakeClock
	fake   *fake.Runtime
	client *runtime.Client
	m      *kuberuntime.Manager
	ctx    context.Context
	logs   string // the manager's PodLogsDir
}

func newManagerEnv(t *testing.T) *managerEnv {
	clk := clocktesting.NewFakeClock(time.Unix(1700000000, 0))
	f, client := startFake(t, fake.WithClock(clk))
	logs := t.TempDir()
	m, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: client, Clock: clk,
		PodLogsDir: logs, DNS: kuberuntime.HostDNS("", nil, "")})
	require.NoError(t, err)
	return &managerEnv{t: t, clock: clk, fake: f, client: client, m: m, ctx: context.Background(), logs: logs}
}

// sync reads the status and syncs once, as a pod worker does.
func (e *managerEnv) sync(pod *v1.Pod, probes kuberuntime.ProbeResults) (*kuberuntime.SyncResult, *kc.PodStatus) {
	e.t.Helper()
	st, err := e.m.GetPodStatus(e.ctx, pod.UID, pod.Name, pod.Namespace)
	require.NoError(e.t, err)
	res := e.m.SyncPod(e.ctx, pod, st, kuberuntime.SyncOptions{Probes: probes})
	st, err = e.m.GetPodStatus(e.ctx, pod.UID, pod.Name, pod.Namespace)
	require.NoError(e.t, err)
	return res, st
}

func step(res *kuberuntime.SyncResult, action kuberuntime.SyncAction, target string) *kuberuntime.SyncStep {
	for i := range res.Steps {
		if res.Steps[i].Action == action && res.Steps[i].Target == target {
			return &res.Steps[i]
		}
	}
	return nil
}

func podSpec(name string, policy v1.RestartPolicy, containers ...v1.Container) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{RestartPolicy: policy, Containers: containers}}
}

func TestSyncPodCrashLoopBackOff(t *testing.T) {
	e := newManagerEnv(t)
	pod := podSpec("crash", v1.RestartPolicyAlways,
		v1.Container{Name: "web", Image: testImage, Args: []string{"serve"}},
		v1.Container{Name: "fail", Image: testImage, Args: []string{"exit", "3"}})

	res, st := e.sync(pod, nil)
	require.NoError(t, res.Err())
	assert.NotNil(t, step(res, kuberuntime.ActionCreatePodSandbox, "default/crash"))
	assert.Equal(t, kc.ContainerStateRunning, st.FindContainerStatusByName("web").State)
	fail := st.FindContainerStatusByName("fail")
	assert.Equal(t, kc.ContainerStateExited, fail.State)
	assert.Equal(t, 3, fail.ExitCode)
	assert.Equal(t, "Error", fail.Reason)

	// The first restart is immediate.
	res, st = e.sync(pod, nil)
	require.NoError(t, res.Err())
	assert.Equal(t, 1, st.FindContainerStatusByName("fail").RestartCount)
	assert.Nil(t, step(res, kuberuntime.ActionStartContainer, "web"), "the running container is left alone")

	// Then 10s, 20s, 40s ... measured from the last exit.
	for restart, delay := 2, 10*time.Second; restart <= 5; restart, delay = restart+1, delay*2 {
		e.clock.Step(delay - time.Second)
		res, _ = e.sync(pod, nil)
		s := step(res, kuberuntime.ActionStartContainer, "fail")
		require.NotNil(t, s)
		require.ErrorIs(t, s.Err, kuberuntime.ErrCrashLoopBackOff, "restart %d still in back-off", restart)
		assert.Contains(t, s.Message, "back-off "+delay.String()+" restarting failed container=fail pod=crash_default(uid-crash)")
		e.clock.Step(time.Second)
		res, st = e.sync(pod, nil)
		require.NoError(t, res.Err(), "restart %d after %s", restart, delay)
		assert.Equal(t, restart, st.FindContainerStatusByName("fail").RestartCount)
	}
	assert.Len(t, st.SandboxStatuses, 1, "restarts reuse the sandbox")
}

func TestSyncPodRestartPolicies(t *testing.T) {
	for _, tc := range []struct {
		policy   v1.RestartPolicy
		code     string
		restarts bool
	}{
		{v1.RestartPolicyAlways, "0", true},
		{v1.RestartPolicyAlways, "1", true},
		{v1.RestartPolicyOnFailure, "0", false},
		{v1.RestartPolicyOnFailure, "1", true},
		{v1.RestartPolicyNever, "1", false},
	} {
		t.Run(string(tc.policy)+"/exit"+tc.code, func(t *testing.T) {
			e := newManagerEnv(t)
			pod := podSpec("p", tc.policy, v1.Container{Name: "c", Image: testImage, Args: []string{"exit", tc.code}})
			_, st := e.sync(pod, nil)
			require.Equal(t, kc.ContainerStateExited, st.FindContainerStatusByName("c").State)
			res, _ := e.sync(pod, nil)
			assert.Equal(t, tc.restarts, step(res, kuberuntime.ActionStartContainer, "c") != nil, "restarted: %s", res)
			if !tc.restarts {
				assert.Nil(t, step(res, kuberuntime.ActionCreatePodSandbox, "default/p"), "a finished pod gets no new sandbox")
			}
		})
	}
}

func TestSyncPodImageChangeAndLiveness(t *testing.T) {
	e := newManagerEnv(t)
	require.NoError(t, e.fake.LoadImages("nodekit.local/testbin:2"))
	require.NoError(t, e.fake.SetBehavior("nodekit.local/testbin:2", fake.TestbinBehavior))
	pod := podSpec("upd", v1.RestartPolicyNever, v1.Container{Name: "c", Image: testImage, Args: []string{"sleep"}})
	_, st := e.sync(pod, nil)
	first := st.FindContainerStatusByName("c")
	require.Equal(t, kc.ContainerStateRunning, first.State)

	// A new image is a new hash: killed and started again, even under Never.
	pod.Spec.Containers[0].Image = "nodekit.local/testbin:2"
	res, st := e.sync(pod, nil)
	require.NoError(t, res.Err())
	assert.NotNil(t, step(res, kuberuntime.ActionKillContainer, "c"))
	second := st.FindContainerStatusByName("c")
	assert.NotEqual(t, first.ID, second.ID)
	assert.Equal(t, kc.ContainerStateRunning, second.State)
	assert.Equal(t, "nodekit.local/testbin:2", second.Image)

	// A failed liveness probe under Never kills without restarting, then the pod.
	res, st = e.sync(pod, failedLiveness{second.ID})
	require.NoError(t, res.Err())
	assert.NotNil(t, step(res, kuberuntime.ActionKillContainer, "c"))
	assert.Nil(t, step(res, kuberuntime.ActionStartContainer, "c"))
	assert.Empty(t, st.RunningContainers())
}

type failedLiveness struct{ id string }

func (f failedLiveness) LivenessFailed(id string) bool { return id == f.id }
func (f failedLiveness) StartupFailed(string) bool     { return false }
func (f failedLiveness) StartupSucceeded(string) bool  { return true }

func TestSyncPodInitContainers(t *testing.T) {
	e := newManagerEnv(t)
	pod := podSpec("init", v1.RestartPolicyAlways, v1.Container{Name: "main", Image: testImage, Args: []string{"sleep"}})
	pod.Spec.InitContainers = []v1.Container{
		{Name: "first", Image: testImage, Args: []string{"exit", "0"}},
		{Name: "second", Image: testImage, Args: []string{"echo", "done"}},
	}
	var order []string
	for i := 0; i < 4; i++ {
		res, _ := e.sync(pod, nil)
		require.NoError(t, res.Err())
		for _, s := range res.Steps {
			if s.Action == kuberuntime.ActionInitContainer || s.Action == kuberuntime.ActionStartContainer {
				order = append(order, s.Target)
			}
		}
	}
	assert.Equal(t, []string{"first", "second", "main"}, order)
}

func TestKillPodGracePeriodAndPreStop(t *testing.T) {
	e := newManagerEnv(t)
	grace := int64(30)
	pod := podSpec("kill", v1.RestartPolicyAlways, v1.Container{Name: "c", Image: testImage, Args: []string{"serve"},
		Lifecycle: &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"/testbin", "echo", "bye"}}}}})
	pod.Spec.TerminationGracePeriodSeconds = &grace
	_, st := e.sync(pod, nil)
	require.Len(t, st.RunningContainers(), 1)

	require.NoError(t, e.m.KillPod(e.ctx, pod, kuberuntime.PodFromStatus(st), nil))
	assert.Equal(t, 1, e.fake.Calls("ExecSync"), "preStop hook ran")
	st, err := e.m.GetPodStatus(e.ctx, pod.UID, pod.Name, pod.Namespace)
	require.NoError(t, err)
	assert.Empty(t, st.RunningContainers())
	assert.Equal(t, kc.SandboxStateNotReady, st.SandboxStatuses[0].State)
	assert.Equal(t, 0, st.FindContainerStatusByName("c").ExitCode, "stopped gracefully")

	// Orphans: KillPod without the pod spec reads what it needs from labels.
	pod2 := podSpec("orphan", v1.RestartPolicyAlways, v1.Container{Name: "c", Image: testImage, Args: []string{"sleep"}})
	_, st2 := e.sync(pod2, nil)
	pods, err := e.m.GetPods(e.ctx, false)
	require.NoError(t, err)
	var running *kc.Pod
	for _, p := range pods {
		if p.ID == pod2.UID {
			running = p
		}
	}
	require.NotNil(t, running)
	assert.Len(t, running.Containers, 1)
	assert.Equal(t, kc.HashContainer(&pod2.Spec.Containers[0]), running.Containers[0].Hash)
	require.NoError(t, e.m.KillPod(e.ctx, nil, running, nil))
	st2, err = e.m.GetPodStatus(e.ctx, pod2.UID, pod2.Name, pod2.Namespace)
	require.NoError(t, err)
	assert.Empty(t, st2.RunningContainers())

	require.NoError(t, e.m.RemovePod(e.ctx, pod.UID))
	require.NoError(t, e.m.RemovePod(e.ctx, pod2.UID))
	all, err := e.m.GetPods(e.ctx, true)
	require.NoError(t, err)
	assert.Empty(t, all)
}

func TestSyncPodRuntimeErrorsAreReported(t *testing.T) {
	e := newManagerEnv(t)
	pod := podSpec("err", v1.RestartPolicyAlways,
		v1.Container{Name: "a", Image: testImage, Args: []string{"sleep"}},
		v1.Container{Name: "b", Image: "nodekit.local/other:1"})
	e.fake.InjectError("RunPodSandbox", errors.New("sandbox boom"), 1)
	res, _ := e.sync(pod, nil)
	s := step(res, kuberuntime.ActionCreatePodSandbox, "default/err")
	require.NotNil(t, s)
	assert.ErrorIs(t, s.Err, kuberuntime.ErrCreatePodSandbox)
	assert.Contains(t, s.Message, "sandbox boom")

	// Next sync: the sandbox comes up; b's image is pulled (and fails), a runs.
	res, st := e.sync(pod, nil)
	assert.NoError(t, step(res, kuberuntime.ActionStartContainer, "a").Err)
	sb := step(res, kuberuntime.ActionStartContainer, "b")
	assert.ErrorIs(t, sb.Err, kuberuntime.ErrImagePull)
	assert.Equal(t, kc.ContainerStateRunning, st.FindContainerStatusByName("a").State)
	res, _ = e.sync(pod, nil)
	assert.ErrorIs(t, step(res, kuberuntime.ActionStartContainer, "b").Err, kuberuntime.ErrImagePullBackOff, "pulls back off")
	e.clock.Step(10 * time.Second)
	e.fake.AllowPull("nodekit.local/other:1")
	res, _ = e.sync(pod, nil)
	assert.NoError(t, step(res, kuberuntime.ActionStartContainer, "b").Err, "pulled after the back-off")
}

// TestHostNetworkPodIPEnv: a host-network pod's status.podIP, in its
// containers' environment, is the node's IP (the kubelet's SyncPod takes
// the API status's IPs); the sandbox reports none.
func TestHostNetworkPodIPEnv(t *testing.T) {
	_, client := startFake(t)
	m, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: client, PodLogsDir: t.TempDir(), HostIP: "127.0.0.5"})
	require.NoError(t, err)
	ctx := context.Background()
	pod := podSpec("hostnet", v1.RestartPolicyNever, v1.Container{Name: "c", Image: testImage, Args: []string{"echo", "ip=$(POD_IP)"},
		Env: []v1.EnvVar{{Name: "POD_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}})
	pod.Spec.HostNetwork = true
	require.NoError(t, m.SyncPod(ctx, pod, nil, kuberuntime.SyncOptions{}).Err())
	poll.Eventually(t, func() bool { return containerLogHas(ctx, t, m, pod, "c", "ip=127.0.0.5") }, 10*time.Second, 10*time.Millisecond,
		"the node's IP as the pod's")
}

// TestRunAsNonRoot: the kubelet's verifyRunAsNonRoot refuses to create a
// container that would run as root under runAsNonRoot, with its messages,
// a Failed event and CreateContainerConfigError.
func TestRunAsNonRoot(t *testing.T) {
	e := newManagerEnv(t)
	for _, tc := range []struct {
		name    string
		sc      *v1.SecurityContext
		wantErr string
	}{
		{"explicit root user", &v1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](0)},
			`container's runAsUser breaks non-root policy (pod: "nonroot-0_default(uid-nonroot-0)", container: c)`},
		{"no user: the image's, root", &v1.SecurityContext{RunAsNonRoot: ptr.To(true)},
			`container has runAsNonRoot and image will run as root (pod: "nonroot-1_default(uid-nonroot-1)", container: c)`},
		{"a non-root user", &v1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1234)}, ""},
		{"runAsNonRoot false", &v1.SecurityContext{RunAsNonRoot: ptr.To(false), RunAsUser: ptr.To[int64](0)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := map[string]int{"explicit root user": 0, "no user: the image's, root": 1, "a non-root user": 2, "runAsNonRoot false": 3}[tc.name]
			pod := podSpec(fmt.Sprintf("nonroot-%d", i), v1.RestartPolicyNever, v1.Container{Name: "c", Image: testImage, Args: []string{"sleep"},
				SecurityContext: tc.sc})
			res, _ := e.sync(pod, nil)
			s := step(res, kuberuntime.ActionStartContainer, "c")
			require.NotNil(t, s)
			if tc.wantErr == "" {
				assert.NoError(t, s.Err)
				return
			}
			require.ErrorIs(t, s.Err, kuberuntime.ErrCreateConfig)
			assert.Contains(t, s.Err.Error(), tc.wantErr)
			assert.Equal(t, "CreateContainerConfigError", s.Reason())
		})
	}
}

// startupLog records what the manager tells a StartupRecorder.
type startupLog struct{ calls []string }

func (s *startupLog) RecordImageStartedPulling(uid types.UID) {
	s.calls = append(s.calls, "pull "+string(uid))
}
func (s *startupLog) RecordImageFinishedPulling(uid types.UID) {
	s.calls = append(s.calls, "pulled "+string(uid))
}
func (s *startupLog) RecordInitContainerStarted(uid types.UID, _ time.Time) {
	s.calls = append(s.calls, "init started "+string(uid))
}
func (s *startupLog) RecordInitContainerFinished(uid types.UID, at time.Time) {
	s.calls = append(s.calls, "init finished "+string(uid)+" "+at.UTC().Format(time.TimeOnly))
}

// The kubelet's pod startup SLI leaves out image pulls and init
// containers (not sidecars): the manager says when they start and end.
func TestSyncPodTellsOfPullsAndInitContainers(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1700000000, 0))
	_, client := startFake(t, fake.WithClock(clk), fake.WithAnyImagePullable())
	rec := &startupLog{}
	m, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: client, Clock: clk,
		PodLogsDir: t.TempDir(), DNS: kuberuntime.HostDNS("", nil, ""), Startup: rec})
	require.NoError(t, err)
	e := &managerEnv{t: t, clock: clk, client: client, m: m, ctx: context.Background()}
	always := v1.ContainerRestartPolicyAlways
	pod := podSpec("startup", v1.RestartPolicyAlways, v1.Container{Name: "main", Image: testImage, Args: []string{"sleep"}})
	pod.Spec.InitContainers = []v1.Container{
		{Name: "sidecar", Image: testImage, Args: []string{"sleep"}, RestartPolicy: &always},
		{Name: "setup", Image: testImage, ImagePullPolicy: v1.PullAlways, Args: []string{"exit", "0"}},
	}
	for i := 0; i < 4; i++ {
		res, _ := e.sync(pod, nil)
		require.NoError(t, res.Err())
		clk.Step(time.Second)
	}
	want := []string{
		"pulled uid-startup",                                                 // sync 1: the sidecar's image is present (a pull under way is over)
		"pull uid-startup", "pulled uid-startup", "init started uid-startup", // setup's image pulled (Always), setup started
		"init finished uid-startup 22:13:21", "pulled uid-startup", // sync 2: setup exited; main's image present
		"init finished uid-startup 22:13:21", // sync 3: told again, as the kubelet does; the tracker counts it once
	}
	assert.Equal(t, want, rec.calls)
}
