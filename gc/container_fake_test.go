package gc_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/containerlog"
	"github.com/nodekit-dev/nodekit/gc"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

// criEnv is a fake runtime served over gRPC, a runtime.Client on it, and a
// pod logs directory; pods and containers are made as the runtime manager
// makes them (the kubelet's labels, podpath's log layout).
type criEnv struct {
	t      testing.TB
	ctx    context.Context
	rt     *fake.Runtime
	client *runtime.Client
	clk    *testingclock.FakeClock
	logs   string
}

func newCRIEnv(t testing.TB, opts ...fake.Option) *criEnv {
	t.Helper()
	clk := testingclock.NewFakeClock(epoch)
	opts = append([]fake.Option{fake.WithClock(clk), fake.WithImages(fake.PauseImage, fake.TestbinImage, fake.RemovableImage)}, opts...)
	rt := fake.New(opts...)
	endpoint := "unix://" + filepath.Join(t.TempDir(), "cri.sock")
	stop, err := rt.Start(endpoint)
	require.NoError(t, err)
	t.Cleanup(stop)
	ctx := context.Background()
	client, err := runtime.Dial(ctx, endpoint)
	require.NoError(t, err)
	t.Cleanup(func() { client.Close(ctx) })
	return &criEnv{t: t, ctx: ctx, rt: rt, client: client, clk: clk, logs: t.TempDir()}
}

type pod struct {
	uid, name string
	sandbox   string
	cfg       *runtimeapi.PodSandboxConfig
}

// pod runs a sandbox for pod uid with the kubelet's labels and extra.
func (e *criEnv) pod(uid, name string, extra map[string]string) *pod {
	e.t.Helper()
	labels := map[string]string{kc.LabelPodName: name, kc.LabelPodNamespace: "default", kc.LabelPodUID: uid}
	for k, v := range extra {
		labels[k] = v
	}
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: uid},
		Labels:       labels,
		LogDirectory: filepath.Join(e.logs, "default_"+name+"_"+uid),
	}
	id, err := e.client.RunPodSandbox(e.ctx, cfg, "")
	require.NoError(e.t, err)
	return &pod{uid: uid, name: name, sandbox: id, cfg: cfg}
}

// container creates and starts instance restart of container name in p,
// running testbin with args, one second after the previous one.
func (e *criEnv) container(p *pod, name string, restart int, args ...string) string {
	e.t.Helper()
	e.clk.Step(time.Second)
	id, err := e.client.CreateContainer(e.ctx, p.sandbox, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name, Attempt: uint32(restart)},
		Image:    &runtimeapi.ImageSpec{Image: fake.TestbinImage},
		Args:     args,
		Labels: map[string]string{kc.LabelPodName: p.name, kc.LabelPodNamespace: "default", kc.LabelPodUID: p.uid,
			kc.LabelContainerName: name},
		Annotations: map[string]string{kc.AnnotationRestartCount: strconv.Itoa(restart)},
		LogPath:     filepath.Join(name, strconv.Itoa(restart)+".log"),
	}, p.cfg)
	require.NoError(e.t, err)
	require.NoError(e.t, e.client.StartContainer(e.ctx, id))
	return id
}

func (e *criEnv) dead(p *pod, name string, restart int) string {
	return e.container(p, name, restart, "exit", "0")
}

func (e *criEnv) containerIDs() []string {
	e.t.Helper()
	cs, err := e.client.ListContainers(e.ctx, nil)
	require.NoError(e.t, err)
	out := []string{}
	for _, c := range cs {
		out = append(out, c.Id)
	}
	slices.Sort(out)
	return out
}

func (e *criEnv) sandboxIDs() []string {
	e.t.Helper()
	sbs, err := e.client.ListPodSandbox(e.ctx, nil)
	require.NoError(e.t, err)
	out := []string{}
	for _, s := range sbs {
		out = append(out, s.Id)
	}
	slices.Sort(out)
	return out
}

func (e *criEnv) exists(rel string) bool {
	_, err := os.Stat(filepath.Join(e.logs, rel))
	return err == nil
}

func sorted(s ...string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestContainerGCFakeRuntime runs the container GC through runtime.Client
// over gRPC against the fake runtime: sandboxes and containers made as
// the runtime manager makes them, exited, then collected.
func TestContainerGCFakeRuntime(t *testing.T) {
	e := newCRIEnv(t)
	web := e.pod("uid-web", "web", nil)
	w0, w1, w2 := e.dead(web, "app", 0), e.dead(web, "app", 1), e.dead(web, "app", 2)
	w3 := e.container(web, "app", 3, "sleep") // running
	job := e.pod("uid-job", "job", nil)
	j0, j1 := e.dead(job, "task", 0), e.dead(job, "task", 1)
	require.NoError(t, e.client.StopPodSandbox(e.ctx, job.sandbox))
	// Not the kubelet's: no pod labels. Never touched.
	foreign, err := e.client.RunPodSandbox(e.ctx, &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "other", Namespace: "x", Uid: "uid-other"}}, "")
	require.NoError(t, err)
	fc, err := e.client.CreateContainer(e.ctx, foreign, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "x"}, Image: &runtimeapi.ImageSpec{Image: fake.TestbinImage}}, nil)
	require.NoError(t, err)
	require.NoError(t, e.client.StopPodSandbox(e.ctx, foreign))
	require.True(t, e.exists("default_web_uid-web/app/0.log"), "the fake writes the log files")

	var mu sync.Mutex
	ready := false
	allReady := func() bool { mu.Lock(); defer mu.Unlock(); return ready }
	g, err := gc.NewContainerGC(gc.ContainerConfig{
		Runtime:         e.client,
		PodState:        gc.PodStateFunc(func(uid types.UID) bool { return uid == "uid-job" || uid == "uid-other" }),
		AllSourcesReady: allReady,
		PodLogsDir:      e.logs,
		Clock:           e.clk,
	})
	require.NoError(t, err)

	// Before every source is ready no pod is gone: only the limit of one
	// dead instance per container applies, to the job too.
	res, err := g.GarbageCollect(e.ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{j0, w0, w1}, ids(res.Containers))
	assert.Empty(t, res.Sandboxes, "a stopped sandbox with a container is active")
	assert.Empty(t, res.PodLogs)
	assert.Equal(t, sorted(w2, w3, j1, fc), e.containerIDs())
	assert.False(t, e.exists("default_web_uid-web/app/0.log"), "a removed container's log file goes with it")
	assert.False(t, e.exists("default_web_uid-web/app/1.log"))
	assert.True(t, e.exists("default_web_uid-web/app/2.log"), "the kept dead instance's log stays, for --previous")
	assert.True(t, e.exists("default_web_uid-web/app/3.log"))

	// Once ready, the deleted pod's dead containers go at once, then its
	// sandbox, now empty, then its log directory.
	mu.Lock()
	ready = true
	mu.Unlock()
	res, err = g.GarbageCollect(e.ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{j1}, ids(res.Containers))
	assert.Equal(t, []string{job.sandbox}, ids(res.Sandboxes))
	assert.Equal(t, []types.UID{"uid-job"}, res.PodLogs)
	assert.Equal(t, sorted(web.sandbox, foreign), e.sandboxIDs())
	assert.Equal(t, sorted(w2, w3, fc), e.containerIDs())
	assert.False(t, e.exists("default_job_uid-job"))
	assert.True(t, e.exists("default_web_uid-web"))

	// Nothing left to do.
	res, err = g.GarbageCollect(e.ctx)
	require.NoError(t, err)
	assert.Equal(t, gc.ContainerResult{}, res)
}

// TestContainerGCSandboxSelector: with a selector, an agent sharing the
// runtime removes only its own pods' containers and sandboxes, and not
// the logs of a pod whose sandbox, anyone's, is still there.
func TestContainerGCSandboxSelector(t *testing.T) {
	e := newCRIEnv(t)
	ours := e.pod("uid-ours", "ours", map[string]string{"nodekit.dev/node": "a"})
	theirs := e.pod("uid-theirs", "theirs", map[string]string{"nodekit.dev/node": "b"})
	o0 := e.dead(ours, "app", 0)
	t0 := e.dead(theirs, "app", 0)
	for _, p := range []*pod{ours, theirs} {
		require.NoError(t, e.client.StopPodSandbox(e.ctx, p.sandbox))
	}
	g, err := gc.NewContainerGC(gc.ContainerConfig{
		Runtime:         e.client,
		PodState:        gc.PodStateFunc(func(types.UID) bool { return true }), // this agent has no pods
		SandboxSelector: map[string]string{"nodekit.dev/node": "a"},
		PodLogsDir:      e.logs,
		Clock:           e.clk,
	})
	require.NoError(t, err)
	res, err := g.GarbageCollect(e.ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{o0}, ids(res.Containers))
	assert.Equal(t, []string{ours.sandbox}, ids(res.Sandboxes))
	assert.Equal(t, []types.UID{"uid-ours"}, res.PodLogs)
	assert.Equal(t, []string{t0}, e.containerIDs())
	assert.Equal(t, []string{theirs.sandbox}, e.sandboxIDs())
	assert.True(t, e.exists("default_theirs_uid-theirs"), "their pod still has a sandbox")
}

// TestContainerGCDeleteAllUnused: under disk pressure the eviction
// manager also removes terminated pods that are not deleted.
func TestContainerGCDeleteAllUnused(t *testing.T) {
	e := newCRIEnv(t)
	p := e.pod("uid-p", "p", nil)
	c0 := e.dead(p, "app", 0)
	require.NoError(t, e.client.StopPodSandbox(e.ctx, p.sandbox))
	g, err := gc.NewContainerGC(gc.ContainerConfig{Runtime: e.client, PodState: terminated{"uid-p"}, PodLogsDir: e.logs, Clock: e.clk})
	require.NoError(t, err)
	res, err := g.GarbageCollect(e.ctx)
	require.NoError(t, err)
	assert.Empty(t, res.Containers, "terminated, not deleted: the newest dead instance stays")
	res, err = g.DeleteAllUnusedContainers(e.ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{c0}, ids(res.Containers))
	assert.Equal(t, []string{p.sandbox}, ids(res.Sandboxes))
	assert.Empty(t, res.PodLogs, "its logs stay: the pod is not deleted")
	assert.True(t, e.exists("default_p_uid-p"))
}

// terminated is a PodStateProvider whose pod is terminated, not deleted.
type terminated struct{ uid types.UID }

func (p terminated) ShouldPodContentBeRemoved(types.UID) bool     { return false }
func (p terminated) ShouldPodRuntimeBeRemoved(uid types.UID) bool { return uid == p.uid }

// stubRuntime scripts the runtime for what the fake cannot show.
type stubRuntime struct {
	mu         sync.Mutex
	containers []*runtimeapi.Container
	listErr    error
	calls      []string
}

func (s *stubRuntime) record(call string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, call)
}

func (s *stubRuntime) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return nil, nil
}
func (s *stubRuntime) StopPodSandbox(_ context.Context, id string) error {
	s.record("StopPodSandbox " + id)
	return nil
}
func (s *stubRuntime) RemovePodSandbox(_ context.Context, id string) error {
	s.record("RemovePodSandbox " + id)
	return nil
}
func (s *stubRuntime) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.containers), s.listErr
}
func (s *stubRuntime) StopContainer(_ context.Context, id string, timeout int64) error {
	s.record("StopContainer " + id + " " + strconv.FormatInt(timeout, 10))
	return nil
}
func (s *stubRuntime) RemoveContainer(_ context.Context, id string) error {
	s.record("RemoveContainer " + id)
	return nil
}

// TestContainerGCUnknownState: a container in unknown state may still run;
// like the kubelet, it is stopped (with its pod's grace period) before
// removal.
func TestContainerGCUnknownState(t *testing.T) {
	s := &stubRuntime{containers: []*runtimeapi.Container{{
		Id: "u", PodSandboxId: "sb", Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
		State:       runtimeapi.ContainerState_CONTAINER_UNKNOWN,
		Labels:      map[string]string{kc.LabelPodUID: "uid-p"},
		Annotations: map[string]string{kc.AnnotationPodTerminationGrace: "7"},
	}}}
	g, err := gc.NewContainerGC(gc.ContainerConfig{Runtime: s, PodState: gc.PodStateFunc(func(types.UID) bool { return true }),
		PodLogsDir: t.TempDir()})
	require.NoError(t, err)
	_, err = g.GarbageCollect(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"StopContainer u 7", "RemoveContainer u"}, s.calls)
}

// TestContainerGCRun: Run collects at once and every Period on the
// injected clock, and records ContainerGCFailed for a failed pass.
func TestContainerGCRun(t *testing.T) {
	s := &stubRuntime{listErr: errors.New("runtime down")}
	clk := testingclock.NewFakeClock(epoch)
	ev := &events{}
	passes := make(chan error, 1)
	g, err := gc.NewContainerGC(gc.ContainerConfig{Runtime: s, Recorder: ev, NodeName: "node-1", Clock: clk,
		PodLogsDir: t.TempDir(), OnCollect: func(_ gc.ContainerResult, err error) { passes <- err }})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- g.Run(ctx) }()
	require.Error(t, <-passes)
	assert.Equal(t, []string{"ContainerGCFailed: listing containers: runtime down"}, ev.list())
	s.mu.Lock()
	s.listErr = nil
	s.mu.Unlock()
	clk.Step(gc.DefaultContainerGCPeriod - time.Second)
	select {
	case <-passes:
		t.Fatal("collected before the period")
	default:
	}
	clk.Step(time.Second)
	require.NoError(t, <-passes)
	cancel()
	require.NoError(t, <-done)
}

// TestContainerGCRemovesRotatedLogsAndLinks: a removed container's
// rotated log files and /var/log/containers link go with it, a link
// whose container is gone goes at the next pass, a running container's
// stays.
func TestContainerGCRemovesRotatedLogsAndLinks(t *testing.T) {
	e := newCRIEnv(t)
	web := e.pod("uid-web", "web", nil)
	w0, w1 := e.dead(web, "app", 0), e.dead(web, "app", 1)
	w2 := e.container(web, "app", 2, "sleep")
	links := t.TempDir()
	rotated := filepath.Join(e.logs, "default_web_uid-web/app/0.log.20261127-120000.gz")
	require.NoError(t, os.WriteFile(rotated, []byte("old"), 0o644))
	link := func(id string, n int) containerlog.ContainerRef {
		ref := containerlog.ContainerRef{PodName: "web", PodNamespace: "default", ContainerName: "app", ContainerID: id}
		require.NoError(t, containerlog.CreateSymlink(links, ref, filepath.Join(e.logs, fmt.Sprintf("default_web_uid-web/app/%d.log", n))))
		return ref
	}
	r0, r2 := link(w0, 0), link(w2, 2)
	gone := containerlog.ContainerRef{PodName: "web", PodNamespace: "default", ContainerName: "app", ContainerID: strings.Repeat("f", 64)}
	require.NoError(t, os.Symlink(filepath.Join(e.logs, "nowhere.log"), containerlog.SymlinkPath(links, gone)))

	g, err := gc.NewContainerGC(gc.ContainerConfig{Runtime: e.client, PodLogsDir: e.logs, ContainersLogDir: links, Clock: e.clk})
	require.NoError(t, err)
	res, err := g.GarbageCollect(e.ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{w0}, ids(res.Containers), "one dead instance is kept")
	assert.NoFileExists(t, rotated, "the removed container's rotated log")
	for ref, want := range map[containerlog.ContainerRef]bool{r0: false, r2: true, gone: false} {
		_, err := os.Lstat(containerlog.SymlinkPath(links, ref))
		assert.Equal(t, want, err == nil, "link of %s", ref.ContainerID)
	}
	assert.Equal(t, sorted(w1, w2), e.containerIDs())
}
