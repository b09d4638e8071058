//go:build integration

package gc_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit-dev/nodekit/gc"
	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/testenv"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/runtime"
)

// cdPod is a host-network pod on the test containerd, labelled as the
// runtime manager labels its pods plus the test's own label, which the GC
// is restricted to: other packages' tests share this containerd.
type cdPod struct {
	t       *testing.T
	ctx     context.Context
	client  *runtime.Client
	uid     string
	sandbox string
	cfg     *runtimeapi.PodSandboxConfig
}

const testLabel = "nodekit.dev/gc-test"

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func newCDPod(t *testing.T, client *runtime.Client, logs, run string) *cdPod {
	t.Helper()
	ctx := context.Background()
	uid := "gc-" + randomSuffix()
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "gc", Namespace: "default", Uid: uid},
		Labels: map[string]string{kc.LabelPodName: "gc", kc.LabelPodNamespace: "default", kc.LabelPodUID: uid,
			testLabel: run},
		LogDirectory: filepath.Join(logs, "default_gc_"+uid),
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent: testenv.CgroupParent(uid),
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}},
		},
	}
	id, err := client.RunPodSandbox(ctx, cfg, "")
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		assert.NoError(t, client.StopPodSandbox(ctx, id))
		assert.NoError(t, client.RemovePodSandbox(ctx, id))
		testenv.RemovePodCgroup(t, uid)
	})
	return &cdPod{t: t, ctx: ctx, client: client, uid: uid, sandbox: id, cfg: cfg}
}

// start creates and starts instance restart of container name.
func (p *cdPod) start(name string, restart int, args ...string) string {
	p.t.Helper()
	id, err := p.client.CreateContainer(p.ctx, p.sandbox, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name, Attempt: uint32(restart)},
		Image:    &runtimeapi.ImageSpec{Image: testenv.TestImage},
		Args:     args,
		Labels: map[string]string{kc.LabelPodName: "gc", kc.LabelPodNamespace: "default", kc.LabelPodUID: p.uid,
			kc.LabelContainerName: name},
		Annotations: map[string]string{kc.AnnotationRestartCount: strconv.Itoa(restart)},
		LogPath:     filepath.Join(name, strconv.Itoa(restart)+".log"),
	}, p.cfg)
	require.NoError(p.t, err)
	require.NoError(p.t, p.client.StartContainer(p.ctx, id))
	return id
}

// exited starts an instance that exits at once and waits for the exit.
func (p *cdPod) exited(name string, restart int) string {
	p.t.Helper()
	id := p.start(name, restart, "exit", "0")
	poll.Eventually(p.t, func() bool {
		r, err := p.client.ContainerStatus(p.ctx, id, false)
		require.NoError(p.t, err)
		return r.Status.State == runtimeapi.ContainerState_CONTAINER_EXITED
	}, 30*time.Second, 50*time.Millisecond, "container %s exited", id)
	return id
}

func (p *cdPod) containers() []string {
	p.t.Helper()
	cs, err := p.client.ListContainers(p.ctx, &runtimeapi.ContainerFilter{PodSandboxId: p.sandbox})
	require.NoError(p.t, err)
	out := []string{}
	for _, c := range cs {
		out = append(out, c.Id)
	}
	slices.Sort(out)
	return out
}

// TestContainerGCOnContainerd: on the real containerd, the container GC
// removes the exited containers beyond one per container, with their log
// files, and once the pod is gone its last container, its sandbox and
// its log directory.
func TestContainerGCOnContainerd(t *testing.T) {
	cd := testenv.NeedContainerd(t)
	client := cd.Dial(t)
	logs := t.TempDir()
	run := randomSuffix()
	p := newCDPod(t, client, logs, run)
	c0, c1, c2 := p.exited("app", 0), p.exited("app", 1), p.exited("app", 2)
	other := p.start("other", 0, "sleep", "600")
	require.FileExists(t, filepath.Join(logs, "default_gc_"+p.uid, "app", "0.log"))

	gone := false
	g, err := gc.NewContainerGC(gc.ContainerConfig{
		Runtime:         client,
		PodState:        gc.PodStateFunc(func(uid types.UID) bool { return gone && uid == types.UID(p.uid) }),
		SandboxSelector: map[string]string{testLabel: run},
		PodLogsDir:      logs,
	})
	require.NoError(t, err)
	ctx := context.Background()
	res, err := g.GarbageCollect(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{c0, c1}, ids(res.Containers), "the oldest two instances of app")
	assert.Empty(t, res.Sandboxes)
	assert.Equal(t, sorted(c2, other), p.containers(), "the newest dead instance and the running container stay")
	assert.NoFileExists(t, filepath.Join(logs, "default_gc_"+p.uid, "app", "0.log"))
	assert.FileExists(t, filepath.Join(logs, "default_gc_"+p.uid, "app", "2.log"))

	// The pod is deleted: killed, then collected.
	require.NoError(t, client.StopPodSandbox(ctx, p.sandbox))
	gone = true
	res, err = g.GarbageCollect(ctx)
	require.NoError(t, err)
	assert.Equal(t, sorted(c2, other), sorted(ids(res.Containers)...))
	assert.Equal(t, []string{p.sandbox}, ids(res.Sandboxes))
	assert.Equal(t, []types.UID{types.UID(p.uid)}, res.PodLogs)
	_, err = client.PodSandboxStatus(ctx, p.sandbox, false)
	assert.ErrorIs(t, err, runtime.ErrNotFound)
	_, err = os.Stat(filepath.Join(logs, "default_gc_"+p.uid))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// testImages is the test containerd's image service restricted to the
// project's test images, so that the image GC cannot touch anything else
// another test may have put on the shared containerd.
type testImages struct{ *runtime.Client }

func (c testImages) ListImages(ctx context.Context, f *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	all, err := c.Client.ListImages(ctx, f)
	return slices.DeleteFunc(all, func(im *runtimeapi.Image) bool {
		return !slices.ContainsFunc(im.RepoTags, func(tag string) bool {
			return tag == testenv.PauseImage || tag == testenv.TestImage || tag == testenv.RemovableImage
		})
	}), err
}

// TestImageGCOnContainerd: on the real containerd, with the disk said to
// be 90% full, the image GC removes the removable image and keeps the
// sandbox image and the one a running container uses; with statfs on
// containerd's image filesystem it reads a real usage.
func TestImageGCOnContainerd(t *testing.T) {
	cd := testenv.NeedContainerd(t)
	client := cd.Dial(t)
	cd.ImportImage(t, testenv.RemovableImage)
	t.Cleanup(func() { cd.ImportImage(t, testenv.RemovableImage) })
	p := newCDPod(t, client, t.TempDir(), randomSuffix())
	p.start("app", 0, "sleep", "600") // testbin in use
	ctx := context.Background()

	policy := gc.DefaultImagePolicy()
	policy.MinAge = 0
	var mount string
	statfs := gc.FsStatsFunc(func(path string) (uint64, uint64, error) {
		mount = path
		return gc.Statfs.FsStats(path)
	})
	g, err := gc.NewImageGC(gc.ImageConfig{Images: testImages{client}, Containers: client, Policy: &policy,
		SandboxImage: testenv.PauseImage, FsStats: statfs})
	require.NoError(t, err)
	res, err := g.GarbageCollect(ctx)
	var fse *gc.FreeSpaceError
	if err != nil {
		require.ErrorAs(t, err, &fse, "only freeing too little on a disk really that full")
	}
	t.Logf("containerd's image filesystem %s: %d%% used", mount, res.UsagePercent)
	assert.NotEmpty(t, mount, "containerd 1.6 reports its snapshotter's mountpoint")
	assert.GreaterOrEqual(t, res.UsagePercent, 0, "statfs read it")
	if res.UsagePercent < policy.HighThresholdPercent {
		assert.Empty(t, res.Removed)
	}

	ev := &events{}
	g, err = gc.NewImageGC(gc.ImageConfig{Images: testImages{client}, Containers: client, Policy: &policy,
		SandboxImage: testenv.PauseImage, Recorder: ev, NodeName: "node-1",
		FsStats: gc.FsStatsFunc(func(string) (uint64, uint64, error) { return 1000, 100, nil })})
	require.NoError(t, err)
	cd.ImportImage(t, testenv.RemovableImage)
	res, err = g.GarbageCollect(ctx)
	require.NoError(t, err)
	assert.Equal(t, 90, res.UsagePercent)
	require.Len(t, res.Removed, 1)
	assert.Equal(t, []string{testenv.RemovableImage}, res.Removed[0].RepoTags)
	assert.Empty(t, ev.list())
	for ref, want := range map[string]bool{testenv.RemovableImage: false, testenv.PauseImage: true, testenv.TestImage: true} {
		st, err := client.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: ref}, false)
		require.NoError(t, err)
		assert.Equal(t, want, st.Image != nil, ref)
	}
}
