package podsync_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/internal/poll"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/podstatus"
	"github.com/nodekit-dev/nodekit/podsync"
	"github.com/nodekit-dev/nodekit/podworkers"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
	"github.com/nodekit-dev/nodekit/statuscache"
)

const testImage = "nodekit.local/testbin:1"

// noProbes is a prober with no probes; it logs the stops in calls.
type noProbes struct {
	removed []types.UID
	calls   []string
	graces  []*int64 // the runtime's TerminatePod and KillPod calls' (killLog)
}

func (*noProbes) LivenessFailed(string) bool             { return false }
func (*noProbes) StartupFailed(string) bool              { return false }
func (*noProbes) StartupSucceeded(string) bool           { return true }
func (*noProbes) UpdatePodStatus(*v1.Pod, *v1.PodStatus) {}
func (p *noProbes) RemovePod(uid types.UID) {
	p.removed = append(p.removed, uid)
	p.calls = append(p.calls, "RemovePod")
}
func (p *noProbes) StopLivenessAndStartup(types.UID) {
	p.calls = append(p.calls, "StopLivenessAndStartup")
}

type env struct {
	client   *runtime.Client
	mgr      *kuberuntime.Manager
	statuses *podstatus.Manager
	cache    *statuscache.Cache
	probes   *noProbes
	syncer   *podsync.Syncer
}

func newEnv(t *testing.T) *env {
	f := fake.New(fake.WithImages(testImage, "nodekit.local/pause:1"))
	endpoint := "unix://" + filepath.Join(t.TempDir(), "cri.sock")
	stop, err := f.Start(endpoint)
	require.NoError(t, err)
	client, err := runtime.Dial(context.Background(), endpoint)
	require.NoError(t, err)
	t.Cleanup(func() { client.Close(context.Background()); stop(); f.Close() })
	e := &env{client: client, statuses: podstatus.NewManager(nil), cache: statuscache.New(), probes: &noProbes{}}
	e.mgr, err = kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: client, PodLogsDir: t.TempDir(),
		DNS: kuberuntime.HostDNS("", nil, ""), SandboxLabels: map[string]string{"node": "n1"}, OwnPodsOnly: true})
	require.NoError(t, err)
	e.syncer, err = podsync.New(podsync.Config{Runtime: killLog{e.mgr, e.probes}, Prober: e.probes, Cache: e.cache, Statuses: e.statuses,
		Reasons: podstatus.NewReasonCache(), RuntimeName: "nodekit-fake", HostIPs: []string{"127.0.0.1"}})
	require.NoError(t, err)
	return e
}

// killLog logs the runtime's kills in the prober's calls, to show the
// order of the two.
type killLog struct {
	*kuberuntime.Manager
	p *noProbes
}

func (k killLog) TerminatePod(ctx context.Context, pod *v1.Pod, grace *int64) (*kc.PodStatus, error) {
	k.p.calls = append(k.p.calls, "TerminatePod")
	k.p.graces = append(k.p.graces, grace)
	return k.Manager.TerminatePod(ctx, pod, grace)
}

func (k killLog) KillPod(ctx context.Context, pod *v1.Pod, running *kc.Pod, grace *int64) error {
	k.p.calls = append(k.p.calls, "KillPod")
	k.p.graces = append(k.p.graces, grace)
	return k.Manager.KillPod(ctx, pod, running, grace)
}

// workers records the kills Housekeeping hands it.
type workers struct {
	known map[types.UID]bool
	pods  []*v1.Pod
	kills []podworkers.Update
}

func (w *workers) Known() map[types.UID]bool     { return w.known }
func (w *workers) Pods() []*v1.Pod               { return w.pods }
func (w *workers) UpdatePod(u podworkers.Update) { w.kills = append(w.kills, u) }

func TestSyncPublishesTerminateForgetsHousekeepingFindsOrphans(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: testImage, Args: []string{"serve"}}}}}

	require.NoError(t, e.syncer.Sync(ctx, podworkers.Work{Type: podworkers.SyncPod, Pod: pod}))
	status, ok := e.statuses.PodStatus(pod.UID)
	require.True(t, ok, "published")
	assert.Equal(t, v1.PodRunning, status.Phase, "read back after the sync that started it")
	assert.Contains(t, status.ContainerStatuses[0].ContainerID, "nodekit-fake://")
	cached, err := e.cache.Get(pod.UID)
	require.NoError(t, err)
	assert.Len(t, cached.ContainerStatuses, 1, "the status cache has the pod as the sync left it")

	// Housekeeping: the pod is an orphan unless the workers know it.
	w := &workers{known: map[types.UID]bool{"u1": true}}
	require.NoError(t, e.syncer.Housekeeping(ctx, w))
	assert.Empty(t, w.kills)
	w.known = nil
	require.NoError(t, e.syncer.Housekeeping(ctx, w))
	require.Len(t, w.kills, 1)
	assert.Equal(t, podworkers.Update{Type: podworkers.SyncPodKill, RuntimeOnly: true,
		Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"}}}, w.kills[0])

	require.NoError(t, e.syncer.Sync(ctx, podworkers.Work{Type: podworkers.TerminatePod, Pod: pod}))
	_, ok = e.statuses.PodStatus(pod.UID)
	assert.False(t, ok, "forgotten")
	assert.Equal(t, []types.UID{"u1"}, e.probes.removed)
	// kubelet SyncTerminatingPod: StopLivenessAndStartup before the kill,
	// RemovePod (readiness too) only once the containers are stopped.
	assert.Equal(t, []string{"StopLivenessAndStartup", "TerminatePod", "RemovePod"}, e.probes.calls)
	pods, err := e.mgr.GetPods(ctx, true)
	require.NoError(t, err)
	assert.Empty(t, pods, "killed and removed")
}

// kubelet SyncTerminatingPod: the kill gets the pod workers' effective
// grace period (calculateEffectiveGracePeriod: the deletion's, an
// eviction's, a force deletion's 1 s); an orphan's containers keep their
// own.
func TestTerminateUsesTheWorkersGracePeriod(t *testing.T) {
	seven := int64(7)
	for _, tc := range []struct {
		name string
		work podworkers.Work
		want *int64
	}{
		{"the effective grace period", podworkers.Work{GracePeriod: 1}, ptr.To[int64](1)},
		{"an eviction: the effective grace period", podworkers.Work{GracePeriod: 1, KillOptions: &podworkers.KillPodOptions{GracePeriodSecondsOverride: &seven}}, ptr.To[int64](1)},
		{"an eviction's override without one", podworkers.Work{KillOptions: &podworkers.KillPodOptions{GracePeriodSecondsOverride: &seven}}, &seven},
		{"an orphan: its containers' own", podworkers.Work{RuntimeOnly: true}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			w := tc.work
			w.Type, w.Pod = podworkers.TerminatePod, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"}}
			require.NoError(t, e.syncer.Sync(context.Background(), w))
			require.Len(t, e.probes.graces, 1)
			assert.Equal(t, tc.want, e.probes.graces[0])
		})
	}
}

func TestNewNeedsItsParts(t *testing.T) {
	_, err := podsync.New(podsync.Config{})
	assert.ErrorContains(t, err, "Runtime, Prober, Cache, Statuses and Reasons are required")
}

type mirrors struct {
	synced  []string
	orphans []string
}

func (m *mirrors) Sync(_ context.Context, p *v1.Pod) error {
	m.synced = append(m.synced, p.Name)
	return nil
}
func (m *mirrors) DeleteOrphans(_ context.Context, static func(ns, name string) bool) error {
	for _, n := range []string{"static", "api", "gone"} {
		if !static("default", n) {
			m.orphans = append(m.orphans, n)
		}
	}
	return nil
}

func TestMirrorPodsForStaticPodsOnly(t *testing.T) {
	e := newEnv(t)
	m := &mirrors{}
	syncer, err := podsync.New(podsync.Config{Runtime: e.mgr, Prober: e.probes, Cache: e.cache, Statuses: e.statuses,
		Reasons: podstatus.NewReasonCache(), Mirrors: m})
	require.NoError(t, err)
	ctx := context.Background()
	pod := func(name, source string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name),
			Annotations: map[string]string{"kubernetes.io/config.source": source}},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: testImage, Args: []string{"sleep"}}}}}
	}
	static, api := pod("static", "file"), pod("api", "api")
	require.NoError(t, syncer.Sync(ctx, podworkers.Work{Type: podworkers.SyncPod, Pod: static}))
	require.NoError(t, syncer.Sync(ctx, podworkers.Work{Type: podworkers.SyncPod, Pod: api}))
	assert.Equal(t, []string{"static"}, m.synced, "only the static pod has a mirror pod")
	require.NoError(t, syncer.Housekeeping(ctx, &workers{known: map[types.UID]bool{"static": true, "api": true}, pods: []*v1.Pod{static, api}}))
	assert.Equal(t, []string{"api", "gone"}, m.orphans, "mirror pods without a static pod are orphans")
}

// An API pod's final status, written before its object is deleted, shows
// its containers as killed (terminated, with their exit codes), and the
// pod in the terminal phase their exit codes give (the kubelet's getPhase
// for a terminated pod), not Pending with containers ContainerCreating.
func TestAPIPodFinalStatusShowsKilledContainers(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "default", UID: "u-api",
		Annotations: map[string]string{"kubernetes.io/config.source": "api"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: testImage, Args: []string{"sleep"}}}}}
	require.NoError(t, e.syncer.Sync(ctx, podworkers.Work{Type: podworkers.SyncPod, Pod: pod}))
	require.NoError(t, e.syncer.Sync(ctx, podworkers.Work{Type: podworkers.TerminatePod, Pod: pod}))
	status, ok := e.statuses.PodStatus(pod.UID)
	require.True(t, ok, "kept until the API source says the pod is gone")
	require.Len(t, status.ContainerStatuses, 1)
	cs := status.ContainerStatuses[0]
	require.NotNil(t, cs.State.Terminated, "killed, not %+v", cs.State)
	want := v1.PodFailed
	if cs.State.Terminated.ExitCode == 0 { // the test image's sleep exits 0 on SIGTERM
		want = v1.PodSucceeded
	}
	assert.Equal(t, want, status.Phase)
}

// An API pod deleted before its containers started ends Failed, its
// container ContainerStatusUnknown (the kubelet's TerminatePod): a terminal
// phase is what lets the status writer delete it from the API.
func TestAPIPodTerminatedBeforeItStartedIsFailed(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "default", UID: "u-api",
		Annotations: map[string]string{"kubernetes.io/config.source": "api"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: testImage, Args: []string{"sleep"}}}}}
	require.NoError(t, e.syncer.Sync(ctx, podworkers.Work{Type: podworkers.TerminatePod, Pod: pod}))
	status, ok := e.statuses.PodStatus(pod.UID)
	require.True(t, ok)
	assert.Equal(t, v1.PodFailed, status.Phase)
	require.Len(t, status.ContainerStatuses, 1)
	require.NotNil(t, status.ContainerStatuses[0].State.Terminated)
	assert.Equal(t, podstatus.ReasonContainerStatusUnknown, status.ContainerStatuses[0].State.Terminated.Reason)
}

func TestEvictedPodKeepsItsFinalStatus(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "default", UID: "u-api",
		Annotations: map[string]string{"kubernetes.io/config.source": "api"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: testImage, Args: []string{"sleep"}}}}}
	require.NoError(t, e.syncer.Sync(ctx, podworkers.Work{Type: podworkers.SyncPod, Pod: pod}))
	zero := int64(0)
	evicted := func(s *v1.PodStatus) {
		s.Phase, s.Reason, s.Message = v1.PodFailed, "Evicted", "The node was low on resource: memory."
	}
	require.NoError(t, e.syncer.Sync(ctx, podworkers.Work{Type: podworkers.TerminatePod, Pod: pod,
		KillOptions: &podworkers.KillPodOptions{GracePeriodSecondsOverride: &zero, Status: evicted}}))

	status, ok := e.statuses.PodStatus(pod.UID)
	require.True(t, ok)
	assert.Equal(t, v1.PodFailed, status.Phase)
	assert.Equal(t, "Evicted", status.Reason)
	assert.Equal(t, "The node was low on resource: memory.", status.Message)
	require.Len(t, status.ContainerStatuses, 1)
	require.NotNil(t, status.ContainerStatuses[0].State.Terminated)
	// The kubelet's killContainer floors even an override of 0 at 2s
	// (minimumGracePeriodInSeconds): SIGTERM, which the test image's sleep
	// answers by exiting 0.
	assert.Equal(t, int32(0), status.ContainerStatuses[0].State.Terminated.ExitCode, "the override 0: stopped with the 2s floor")
	// kubelet: an evicted pod's containers stay, stopped, until it is
	// removed (kubectl logs of an evicted pod).
	pods, err := e.mgr.GetPods(ctx, true)
	require.NoError(t, err)
	require.Len(t, pods, 1, "kept in the runtime")
	require.Len(t, pods[0].Containers, 1)
	assert.NotEqual(t, kc.ContainerStateRunning, pods[0].Containers[0].State, "stopped")
}

// podDirs is a Volumes whose pods have directories; TearDown removes one.
type podDirs struct{ dirs, tornDown []types.UID }

func (*podDirs) SetUpAll(*v1.Pod) error       { return nil }
func (v *podDirs) PodUIDs() []types.UID       { return v.dirs }
func (v *podDirs) TearDown(pod *v1.Pod) error { v.tornDown = append(v.tornDown, pod.UID); return nil }

// kubelet cleanupOrphanedPodDirs: housekeeping tears down the directory
// of a pod that neither the workers nor the runtime have; one the runtime
// still runs (an orphan being killed) keeps it until it is gone.
func TestHousekeepingRemovesOrphanedPodDirectories(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	orphan := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orphan", Namespace: "default", UID: "in-runtime"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: testImage, Args: []string{"serve"}}}}}
	require.NoError(t, e.syncer.Sync(ctx, podworkers.Work{Type: podworkers.SyncPod, Pod: orphan}))
	vols := &podDirs{dirs: []types.UID{"known", "in-runtime", "gone"}}
	s, err := podsync.New(podsync.Config{Runtime: e.mgr, Prober: e.probes, Cache: e.cache, Statuses: e.statuses, Volumes: vols,
		Reasons: podstatus.NewReasonCache(), RuntimeName: "nodekit-fake", HostIPs: []string{"127.0.0.1"}})
	require.NoError(t, err)
	w := &workers{known: map[types.UID]bool{"known": true}}
	require.NoError(t, s.Housekeeping(ctx, w))
	assert.Equal(t, []types.UID{"gone"}, vols.tornDown)
	require.Len(t, w.kills, 1, "the pod in the runtime is killed as an orphan")
	assert.Equal(t, types.UID("in-runtime"), w.kills[0].Pod.UID)
}

// kubelet active_deadline.go: a pod active longer than its
// spec.activeDeadlineSeconds is synced at once by housekeeping (ShouldSync)
// and fails (ShouldEvict: Failed, DeadlineExceeded, the kubelet's
// message), then is terminated as a finished pod, keeping that status.
// Upstream e2e: "Pods should allow activeDeadlineSeconds to be updated".
func TestActiveDeadlineFailsThePod(t *testing.T) {
	e := newEnv(t)
	clk := clocktesting.NewFakeClock(time.Now())
	statuses := podstatus.NewManager(clk)
	s, err := podsync.New(podsync.Config{Runtime: e.mgr, Prober: e.probes, Cache: e.cache, Statuses: statuses,
		Reasons: podstatus.NewReasonCache(), RuntimeName: "nodekit-fake", HostIPs: []string{"127.0.0.1"}, Clock: clk})
	require.NoError(t, err)
	ctx := context.Background()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"},
		Spec: v1.PodSpec{ActiveDeadlineSeconds: ptr.To[int64](30),
			Containers: []v1.Container{{Name: "c", Image: testImage, Args: []string{"serve"}}}}}
	running := func() *kc.PodStatus {
		st, err := e.mgr.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		require.NoError(t, err)
		return st
	}
	require.NoError(t, s.Sync(ctx, podworkers.Work{Type: podworkers.SyncPod, Pod: pod}))
	status, _ := statuses.PodStatus(pod.UID)
	require.Equal(t, v1.PodRunning, status.Phase)

	w := &workers{pods: []*v1.Pod{pod}, known: map[types.UID]bool{"u1": true}}
	clk.Step(29 * time.Second)
	require.NoError(t, s.Housekeeping(ctx, w))
	assert.Empty(t, w.kills, "within its deadline")
	require.NoError(t, s.Sync(ctx, podworkers.Work{Type: podworkers.SyncPod, Pod: pod, Status: running()}))

	clk.Step(time.Second)
	require.NoError(t, s.Housekeeping(ctx, w))
	require.Len(t, w.kills, 1, "past it: synced at once")
	assert.Equal(t, podworkers.SyncPodSync, w.kills[0].Type)
	err = s.Sync(ctx, podworkers.Work{Type: podworkers.SyncPod, Pod: pod, Status: running()})
	require.ErrorIs(t, err, podworkers.ErrPodTerminal)
	status, _ = statuses.PodStatus(pod.UID)
	assert.Equal(t, []string{"Failed", "DeadlineExceeded", "Pod was active on the node longer than the specified deadline"},
		[]string{string(status.Phase), status.Reason, status.Message})

	require.NoError(t, s.Sync(ctx, podworkers.Work{Type: podworkers.TerminatePod, Pod: pod, Finished: true}))
	status, _ = statuses.PodStatus(pod.UID)
	assert.Equal(t, []string{"Failed", "DeadlineExceeded"}, []string{string(status.Phase), status.Reason}, "kept once killed")
	require.NotNil(t, status.ContainerStatuses[0].State.Terminated, "its container was killed")
}

// volErr is a SetUpAll failure about one volume, as volume.SetUpError.
type volErr struct {
	name string
	err  error
}

func (e *volErr) Error() string      { return "volumes[" + e.name + "]: " + e.err.Error() }
func (e *volErr) Unwrap() error      { return e.err }
func (e *volErr) VolumeName() string { return e.name }

// failingVolumes fails SetUpAll with err while it is set.
type failingVolumes struct{ err error }

func (v *failingVolumes) SetUpAll(*v1.Pod) error { return v.err }
func (*failingVolumes) TearDown(*v1.Pod) error   { return nil }
func (*failingVolumes) PodUIDs() []types.UID     { return nil }

// events records Eventf calls.
type events struct{ got []string }

func (e *events) Eventf(_ apiruntime.Object, typ, reason, format string, args ...any) {
	e.got = append(e.got, typ+" "+reason+" "+fmt.Sprintf(format, args...))
}

// kubelet WaitForAttachAndMount and the volume manager's FailedMount: a
// pod whose ConfigMap volume cannot be set up yet is not started (no
// sandbox, ContainerCreating), with an event naming the volume, and
// starts once it can; a running pod whose refresh fails goes on.
func TestSyncWaitsForVolumesBeforeTheFirstStart(t *testing.T) {
	e := newEnv(t)
	vols := &failingVolumes{err: errors.Join(&volErr{"cfg", errors.New(`configmaps "app-config" not found`)})}
	rec := &events{}
	s, err := podsync.New(podsync.Config{Runtime: e.mgr, Prober: e.probes, Cache: e.cache, Statuses: e.statuses, Volumes: vols,
		Recorder: rec, Reasons: podstatus.NewReasonCache(), RuntimeName: "nodekit-fake", HostIPs: []string{"127.0.0.1"}})
	require.NoError(t, err)
	ctx := context.Background()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: testImage, Args: []string{"serve"}}}}}
	err = s.Sync(ctx, podworkers.Work{Type: podworkers.SyncPod, Pod: pod})
	require.ErrorContains(t, err, "unmounted volumes=[cfg]")
	assert.Equal(t, []string{`Warning FailedMount MountVolume.SetUp failed for volume "cfg" : configmaps "app-config" not found`}, rec.got)
	pods, err := e.mgr.GetPods(ctx, true)
	require.NoError(t, err)
	assert.Empty(t, pods, "no sandbox")
	status, ok := e.statuses.PodStatus(pod.UID)
	require.True(t, ok)
	assert.Equal(t, v1.PodPending, status.Phase)
	assert.Equal(t, "ContainerCreating", status.ContainerStatuses[0].State.Waiting.Reason)

	vols.err = nil
	require.NoError(t, s.Sync(ctx, podworkers.Work{Type: podworkers.SyncPod, Pod: pod}))
	st, err := e.mgr.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	require.NoError(t, err)
	vols.err = errors.Join(&volErr{"cfg", errors.New("gone")})
	require.NoError(t, s.Sync(ctx, podworkers.Work{Type: podworkers.SyncPod, Pod: pod, Status: st}), "running: goes on")
	assert.Len(t, rec.got, 1, "no event for a running pod's refresh")
}

// pendingVolumes fails SetUpAll with a pending error (a CSI volume not
// attached yet) until attachedAfter tries, or forever when it is 0.
type pendingVolumes struct {
	mu            sync.Mutex
	tries         int
	attachedAfter int
}

type notAttached struct{}

func (notAttached) Error() string { return "volume h1 is not attached for volume attachment csi-1" }
func (notAttached) Pending() bool { return true }

func (v *pendingVolumes) SetUpAll(*v1.Pod) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.tries++
	if v.attachedAfter > 0 && v.tries > v.attachedAfter {
		return nil
	}
	return errors.Join(&volErr{"data", notAttached{}})
}
func (*pendingVolumes) TearDown(*v1.Pod) error { return nil }
func (*pendingVolumes) PodUIDs() []types.UID   { return nil }

// kubelet WaitForAttachAndMount: a volume that is pending (not attached
// yet) is tried every 300 ms within the same sync, without an event, and
// the pod starts as soon as it is set up; one still pending after
// 2m3s is a FailedMount event of WaitForAttach; a sync whose context ends
// (the pod is being killed) stops waiting, with no event.
func TestSyncWaitsForPendingVolumesWithinTheSync(t *testing.T) {
	for _, tc := range []struct {
		name          string
		attachedAfter int
		cancel        bool
		wantTries     int
		wantEvents    []string
	}{
		{name: "attached on the fourth try", attachedAfter: 3, wantTries: 4},
		{name: "never attached", wantTries: 1 + int(podsync.AttachAndMountTimeout/podsync.AttachAndMountRetryInterval),
			wantEvents: []string{`Warning FailedMount MountVolume.WaitForAttach failed for volume "data" : volume h1 is not attached for volume attachment csi-1`}},
		{name: "killed while waiting", cancel: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			vols := &pendingVolumes{attachedAfter: tc.attachedAfter}
			rec := &events{}
			clk := clocktesting.NewFakeClock(time.Now())
			s, err := podsync.New(podsync.Config{Runtime: e.mgr, Prober: e.probes, Cache: e.cache, Statuses: e.statuses, Volumes: vols,
				Recorder: rec, Reasons: podstatus.NewReasonCache(), RuntimeName: "nodekit-fake", HostIPs: []string{"127.0.0.1"}, Clock: clk})
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default", UID: "u1"},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: testImage, Args: []string{"serve"}}}}}
			done := make(chan error, 1)
			go func() { done <- s.Sync(ctx, podworkers.Work{Type: podworkers.SyncPod, Pod: pod}) }()
			var syncErr error
			poll.Eventually(t, func() bool {
				select {
				case syncErr = <-done:
					return true
				default:
				}
				if clk.HasWaiters() {
					if tc.cancel {
						cancel()
					} else {
						clk.Step(podsync.AttachAndMountRetryInterval)
					}
				}
				return false
			}, 20*time.Second, 0, "the sync returns")
			pods, err := e.mgr.GetPods(context.Background(), true)
			require.NoError(t, err)
			if tc.attachedAfter > 0 {
				require.NoError(t, syncErr)
				assert.Len(t, pods, 1, "started once attached")
			} else {
				require.ErrorContains(t, syncErr, "unmounted volumes=[data]")
				assert.Empty(t, pods, "no sandbox")
			}
			if tc.wantTries > 0 {
				assert.Equal(t, tc.wantTries, vols.tries)
			}
			assert.Equal(t, tc.wantEvents, rec.got)
		})
	}
}
