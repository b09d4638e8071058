package kuberuntime_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

// startTracker is a runtime whose start calls take a little time, as a
// real one's do, and which counts the pods between their RunPodSandbox and
// the end of their StartContainer (one container each).
type startTracker struct {
	kuberuntime.RuntimeService
	mu        sync.Mutex
	podOf     map[string]string // sandbox or container ID → pod name
	starting  map[string]bool
	most      int
	beforeRun func(pod string) // if set, runs first in RunPodSandbox
}

func newStartTracker(rt kuberuntime.RuntimeService) *startTracker {
	return &startTracker{RuntimeService: rt, podOf: map[string]string{}, starting: map[string]bool{}}
}

func (s *startTracker) RunPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	pod := cfg.GetMetadata().GetName()
	if s.beforeRun != nil {
		s.beforeRun(pod)
	}
	s.mu.Lock()
	s.starting[pod] = true
	s.most = max(s.most, len(s.starting))
	s.mu.Unlock()
	time.Sleep(2 * time.Millisecond) // the runtime's work: others may come in meanwhile
	id, err := s.RuntimeService.RunPodSandbox(ctx, cfg, handler)
	s.mu.Lock()
	s.podOf[id] = pod
	s.mu.Unlock()
	return id, err
}

func (s *startTracker) CreateContainer(ctx context.Context, sandboxID string, cfg *runtimeapi.ContainerConfig,
	sandboxCfg *runtimeapi.PodSandboxConfig) (string, error) {
	time.Sleep(2 * time.Millisecond)
	id, err := s.RuntimeService.CreateContainer(ctx, sandboxID, cfg, sandboxCfg)
	s.mu.Lock()
	s.podOf[id] = s.podOf[sandboxID]
	s.mu.Unlock()
	return id, err
}

func (s *startTracker) StartContainer(ctx context.Context, id string) error {
	time.Sleep(2 * time.Millisecond)
	err := s.RuntimeService.StartContainer(ctx, id)
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.starting, s.podOf[id]) // one container per pod: its start is done
	return err
}

func (s *startTracker) mostAtOnce() int { s.mu.Lock(); defer s.mu.Unlock(); return s.most }

// syncAll syncs pods at once, as pod workers do, and returns their results.
func syncAll(t *testing.T, m *kuberuntime.Manager, ctx context.Context, pods []*v1.Pod) []*kuberuntime.SyncResult {
	t.Helper()
	res := make([]*kuberuntime.SyncResult, len(pods))
	var wg sync.WaitGroup
	for i, pod := range pods {
		wg.Add(1)
		go func() { defer wg.Done(); res[i] = m.SyncPod(ctx, pod, nil, kuberuntime.SyncOptions{}) }()
	}
	wg.Wait()
	return res
}

func TestMaxParallelPodStarts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		limit    int
		wantMost func(t *testing.T, most int)
	}{
		{"bounded to 2", 2, func(t *testing.T, most int) { assert.LessOrEqual(t, most, 2) }},
		{"unbounded (the kubelet's)", -1, func(t *testing.T, most int) { assert.Greater(t, most, 2) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newManagerEnv(t)
			rt := newStartTracker(e.client)
			m, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: rt, Images: e.client, Clock: e.clock,
				PodLogsDir: e.logs, DNS: kuberuntime.HostDNS("", nil, ""), MaxParallelPodStarts: tc.limit})
			require.NoError(t, err)
			pods := make([]*v1.Pod, 12)
			for i := range pods {
				pods[i] = podSpec(fmt.Sprintf("p%02d", i), v1.RestartPolicyAlways, v1.Container{Name: "c", Image: testImage})
			}
			for i, res := range syncAll(t, m, context.Background(), pods) {
				require.NoError(t, res.Err(), pods[i].Name)
			}
			tc.wantMost(t, rt.mostAtOnce())
		})
	}
}

// blockedPull is an image service whose pulls wait until release is
// closed.
type blockedPull struct {
	kuberuntime.ImageService
	pulling chan struct{}
	release chan struct{}
}

func (b *blockedPull) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig,
	cfg *runtimeapi.PodSandboxConfig) (string, error) {
	close(b.pulling)
	<-b.release
	return b.ImageService.PullImage(ctx, image, auth, cfg)
}

// A pod pulling its image does not hold its turn: with one turn, another
// pod starts meanwhile; and a sync whose context ends while it waits for
// its turn fails without calling the runtime.
func TestParallelPodStartsTurns(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1700000000, 0))
	_, client := startFake(t, fake.WithClock(clk), fake.WithAnyImagePullable())
	pull := &blockedPull{ImageService: client, pulling: make(chan struct{}), release: make(chan struct{})}
	rt := newStartTracker(client)
	m, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: rt, Images: pull, Clock: clk, PodLogsDir: t.TempDir(),
		DNS: kuberuntime.HostDNS("", nil, ""), MaxParallelPodStarts: 1})
	require.NoError(t, err)

	puller := podSpec("puller", v1.RestartPolicyAlways, v1.Container{Name: "c", Image: "registry.example/absent:1"})
	done := make(chan *kuberuntime.SyncResult)
	go func() { done <- m.SyncPod(context.Background(), puller, nil, kuberuntime.SyncOptions{}) }()
	<-pull.pulling // it has its sandbox, so it had the turn
	other := podSpec("other", v1.RestartPolicyAlways, v1.Container{Name: "c", Image: testImage})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, m.SyncPod(ctx, other, nil, kuberuntime.SyncOptions{}).Err(), "starts while the other pod pulls")

	// A pod whose sync is cancelled while it waits gives up.
	hold := make(chan struct{})
	inRun := make(chan struct{})
	rt2 := newStartTracker(client)
	rt2.beforeRun = func(pod string) {
		switch pod {
		case "holder":
			close(inRun)
			<-hold
		case "late":
			t.Error("RunPodSandbox called for a pod whose sync ended while it waited")
		}
	}
	rec, metrics := &recorder{}, kuberuntime.NewSyncMetrics()
	m2, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: rt2, Images: client, Clock: clk, PodLogsDir: t.TempDir(),
		DNS: kuberuntime.HostDNS("", nil, ""), MaxParallelPodStarts: 1, Recorder: rec, Metrics: metrics})
	require.NoError(t, err)
	holder := podSpec("holder", v1.RestartPolicyAlways, v1.Container{Name: "c", Image: testImage})
	held := make(chan *kuberuntime.SyncResult)
	go func() { held <- m2.SyncPod(context.Background(), holder, nil, kuberuntime.SyncOptions{}) }()
	<-inRun
	lateCtx, lateCancel := context.WithCancel(context.Background())
	lateCancel()
	late := m2.SyncPod(lateCtx, podSpec("late", v1.RestartPolicyAlways, v1.Container{Name: "c", Image: testImage}), nil,
		kuberuntime.SyncOptions{})
	require.ErrorIs(t, late.Err(), kuberuntime.ErrCreatePodSandbox)
	assert.ErrorIs(t, late.Err(), context.Canceled)
	close(hold)
	require.NoError(t, (<-held).Err())
	// Nothing was tried for it: no FailedCreatePodSandBox, no start error.
	for _, ev := range rec.take() {
		assert.NotContains(t, ev, "late", "an event for the pod whose sync ended while it waited")
	}
	require.NoError(t, testutil.CollectAndCompare(metrics, strings.NewReader(`
# HELP kubelet_started_pods_errors_total Cumulative number of errors when starting pods
# TYPE kubelet_started_pods_errors_total counter
kubelet_started_pods_errors_total 0
# HELP kubelet_started_pods_total Cumulative number of pods started
# TYPE kubelet_started_pods_total counter
kubelet_started_pods_total 1
`), "kubelet_started_pods_total", "kubelet_started_pods_errors_total"))

	close(pull.release)
	require.NoError(t, (<-done).Err(), "the puller starts once its pull is done")
}
