package fake

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/internal/poll"
)

func TestCreateContainerErrors(t *testing.T) {
	r, _ := newTest(t)
	cfg := podConfig("p")
	sb := runPod(t, r, cfg)
	create(t, r, sb, cfg, testbin("taken"))

	tests := []struct {
		name     string
		req      *runtimeapi.CreateContainerRequest
		code     codes.Code
		contains string
	}{
		{"unknown sandbox", &runtimeapi.CreateContainerRequest{PodSandboxId: "nope", SandboxConfig: cfg, Config: testbin("a")}, codes.NotFound, `failed to find sandbox id "nope"`},
		{"no metadata", &runtimeapi.CreateContainerRequest{PodSandboxId: sb, SandboxConfig: cfg, Config: &runtimeapi.ContainerConfig{}}, codes.Unknown, "must include metadata"},
		{"name reserved", &runtimeapi.CreateContainerRequest{PodSandboxId: sb, SandboxConfig: cfg, Config: testbin("taken")}, codes.Unknown, `name "taken_p_default_uid-p_0" is reserved for`},
		{"missing image", &runtimeapi.CreateContainerRequest{PodSandboxId: sb, SandboxConfig: cfg, Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "b"}, Image: &runtimeapi.ImageSpec{Image: "busybox"}}}, codes.NotFound, `failed to resolve image "busybox"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.CreateContainer(context.Background(), tt.req)
			requireCode(t, err, tt.code, tt.contains)
		})
	}
}

func TestContainerLifecycle(t *testing.T) {
	r, clk := newTest(t)
	ctx := context.Background()
	pc := podConfig("p")
	pc.LogDirectory = t.TempDir()
	sb := runPod(t, r, pc)
	cfg := testbin("app")
	cfg.LogPath = "app/0.log"
	cfg.Annotations = map[string]string{"k": "v"}
	cfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: "/tmp/data"}}
	cfg.Linux = &runtimeapi.LinuxContainerConfig{Resources: &runtimeapi.LinuxContainerResources{CpuShares: 512}}
	// The image may be named by its ID too.
	cfg.Image.Image = imageIDFor(TestbinImage)

	clk.Step(time.Second)
	id := create(t, r, sb, pc, cfg)
	st := containerStatus(t, r, id)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_CREATED, st.State)
	assert.Equal(t, epoch.Add(time.Second).UnixNano(), st.CreatedAt)
	assert.Empty(t, st.ImageId, "containerd 1.6 leaves image_id empty")
	assert.Zero(t, st.StartedAt)
	assert.Equal(t, TestbinImage, st.Image.Image, "first tag of the image")
	assert.Equal(t, imageIDFor(TestbinImage), st.ImageRef)
	assert.Equal(t, filepath.Join(pc.LogDirectory, "app/0.log"), st.LogPath)
	assert.Equal(t, "/data", st.Mounts[0].ContainerPath)
	assert.Equal(t, int64(512), st.Resources.Linux.CpuShares)
	assert.Equal(t, map[string]string{"k": "v"}, st.Annotations)
	assert.Equal(t, map[string]string{"container": "app"}, st.Labels)

	clk.Step(time.Second)
	start(t, r, id)
	st = containerStatus(t, r, id)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, st.State)
	assert.Equal(t, epoch.Add(2*time.Second).UnixNano(), st.StartedAt)

	_, err := r.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id})
	requireCode(t, err, codes.Unknown, "container is in CONTAINER_RUNNING state")

	_, err = r.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{
		ContainerId: id, Linux: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 1 << 30}})
	require.NoError(t, err)
	res := containerStatus(t, r, id).Resources.Linux
	assert.Equal(t, int64(1<<30), res.MemoryLimitInBytes)
	assert.Equal(t, int64(1<<30), res.MemorySwapLimitInBytes, "swap limited to the memory limit, as containerd reports")
	assert.Equal(t, int64(512), res.CpuShares, "fields not in the update keep their value")

	_, err = r.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: id})
	require.NoError(t, err)

	verbose, err := r.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	require.NoError(t, err)
	assert.Contains(t, verbose.Info["info"], sb)

	// Removing the image does not affect the container; its status then
	// names the image as configured.
	_, err = r.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: TestbinImage}})
	require.NoError(t, err)
	st = containerStatus(t, r, id)
	assert.Equal(t, cfg.Image.Image, st.Image.Image)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, st.State)

	_, err = r.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: "nope"})
	requireCode(t, err, codes.NotFound, "")
	_, err = r.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: "nope"})
	requireCode(t, err, codes.NotFound, `an error occurred when try to find container "nope": not found`)
	_, err = r.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{})
	requireCode(t, err, codes.Unknown, "prefix can't be empty")
}

func TestContainerExits(t *testing.T) {
	oomCfg := testbin("oom", "alloc", "64")
	oomCfg.Linux = &runtimeapi.LinuxContainerConfig{Resources: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 32 << 20}}
	shell := testbin("shell")
	shell.Command = []string{"/bin/sh", "-c", "true"}

	tests := []struct {
		name    string
		cfg     *runtimeapi.ContainerConfig
		step    time.Duration // clock advance after start
		running bool          // still running after step
		code    int32
		reason  string
	}{
		{name: "exit 0", cfg: testbin("e0", "exit"), reason: "Completed"},
		{name: "exit 3", cfg: testbin("e3", "exit", "3"), code: 3, reason: "Error"},
		{name: "exit 256 wraps", cfg: testbin("e256", "exit", "256"), code: 0, reason: "Completed"},
		{name: "echo", cfg: testbin("echo", "echo", "hi"), reason: "Completed"},
		{name: "stderr", cfg: testbin("stderr", "stderr", "oops"), reason: "Completed"},
		{name: "hostname", cfg: testbin("host", "hostname"), reason: "Completed"},
		{name: "unknown mode", cfg: testbin("bad", "frobnicate"), code: 2, reason: "Error"},
		{name: "bad sleep", cfg: testbin("badsleep", "sleep", "x"), code: 2, reason: "Error"},
		{name: "sleep before", cfg: testbin("s1", "sleep", "5"), step: 4 * time.Second, running: true},
		{name: "sleep after", cfg: testbin("s2", "sleep", "5"), step: 5 * time.Second, reason: "Completed"},
		{name: "fractional sleep", cfg: testbin("s3", "sleep", "0.5"), step: 500 * time.Millisecond, reason: "Completed"},
		{name: "sleep forever", cfg: testbin("s4", "sleep"), step: time.Hour, running: true},
		{name: "serve", cfg: testbin("serve"), step: time.Hour, running: true},
		{name: "default is serve", cfg: testbin("default"), step: time.Hour, running: true},
		{name: "alloc fits", cfg: testbin("alloc", "alloc", "16"), step: time.Hour, running: true},
		{name: "alloc over limit", cfg: oomCfg, code: 137, reason: "OOMKilled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, clk := newTest(t)
			_, id := run(t, r, tt.cfg)
			clk.Step(tt.step)
			st := containerStatus(t, r, id)
			if tt.running {
				assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, st.State)
				assert.Zero(t, st.FinishedAt)
				return
			}
			assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st.State)
			assert.Equal(t, tt.code, st.ExitCode)
			assert.Equal(t, tt.reason, st.Reason)
			assert.Equal(t, epoch.Add(tt.step).UnixNano(), st.FinishedAt, "exit time on the fake clock")
		})
	}

	t.Run("start error", func(t *testing.T) {
		r, _ := newTest(t)
		pc := podConfig("p")
		id := create(t, r, runPod(t, r, pc), pc, shell)
		_, err := r.StartContainer(context.Background(), &runtimeapi.StartContainerRequest{ContainerId: id})
		requireCode(t, err, codes.Unknown, `exec: "/bin/sh": stat /bin/sh: no such file or directory`)
		st := containerStatus(t, r, id)
		assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st.State)
		assert.Equal(t, int32(128), st.ExitCode)
		assert.Equal(t, "StartError", st.Reason)
		assert.Contains(t, st.Message, "no such file or directory")
	})

	t.Run("behavior", func(t *testing.T) {
		r, clk := newTest(t, WithImages("busybox"),
			WithBehavior("busybox", BehaviorOf(OOMKilledAfter(3*time.Second))))
		_, id := run(t, r, &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "bb"},
			Image:    &runtimeapi.ImageSpec{Image: "docker.io/library/busybox:latest"},
		})
		clk.Step(3 * time.Second)
		st := containerStatus(t, r, id)
		assert.Equal(t, int32(137), st.ExitCode)
		assert.Equal(t, "OOMKilled", st.Reason)
	})

	t.Run("Exit", func(t *testing.T) {
		r, _ := newTest(t)
		_, id := run(t, r, testbin("x"))
		require.NoError(t, r.Exit(id, 7))
		st := containerStatus(t, r, id)
		assert.Equal(t, int32(7), st.ExitCode)
		assert.Equal(t, "Error", st.Reason)
		assert.Error(t, r.Exit(id, 0), "not running any more")
		assert.Error(t, r.Exit("nope", 0))
	})
}

func TestStopContainer(t *testing.T) {
	ignoring := BehaviorOf(Program{IgnoreSIGTERM: true, StopExitCode: 9})
	tests := []struct {
		name     string
		cfg      *runtimeapi.ContainerConfig
		behavior Behavior
		timeout  int64
		wait     time.Duration // grace that must pass on the clock first
		code     int32
		reason   string
	}{
		{name: "handles SIGTERM", cfg: testbin("serve"), timeout: 30, reason: "Completed"},
		{name: "no timeout kills", cfg: testbin("serve"), timeout: 0, code: 137, reason: "Error"},
		{name: "sleep exits 0 on SIGTERM", cfg: testbin("sleep", "sleep", "100"), timeout: 10, reason: "Completed"},
		{name: "ignores SIGTERM", cfg: testbin("stubborn"), behavior: ignoring, timeout: 10, wait: 10 * time.Second, code: 137, reason: "Error"},
		{name: "dies of SIGTERM", cfg: testbin("dies"), behavior: BehaviorOf(Program{StopExitCode: 143}), timeout: 10, code: 143, reason: "Error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []Option
			if tt.behavior != nil {
				opts = append(opts, WithBehavior(TestbinImage, tt.behavior))
			}
			r, clk := newTest(t, opts...)
			_, id := run(t, r, tt.cfg)
			waiters := clk.Waiters()
			done := async(func() (*runtimeapi.StopContainerResponse, error) {
				return r.StopContainer(context.Background(), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: tt.timeout})
			})
			if tt.wait > 0 {
				awaitWaiters(t, clk, waiters+1)
				clk.Step(tt.wait - time.Nanosecond)
				assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, containerStatus(t, r, id).State, "still in its grace period")
				clk.Step(time.Nanosecond)
			}
			require.NoError(t, <-done)
			st := containerStatus(t, r, id)
			assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st.State)
			assert.Equal(t, tt.code, st.ExitCode)
			assert.Equal(t, tt.reason, st.Reason)
			assert.Equal(t, epoch.Add(tt.wait).UnixNano(), st.FinishedAt)

			// Stopping again is a no-op.
			_, err := r.StopContainer(context.Background(), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: tt.timeout})
			require.NoError(t, err)
		})
	}

	t.Run("cancelled while waiting", func(t *testing.T) {
		r, clk := newTest(t, WithBehavior(TestbinImage, ignoring))
		_, id := run(t, r, testbin("stubborn"))
		ctx, cancel := context.WithCancel(context.Background())
		waiters := clk.Waiters()
		done := async(func() (*runtimeapi.StopContainerResponse, error) {
			return r.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 10})
		})
		awaitWaiters(t, clk, waiters+1)
		cancel()
		requireCode(t, <-done, codes.Canceled, "")
		assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, containerStatus(t, r, id).State)
	})

	t.Run("created and unknown", func(t *testing.T) {
		r, _ := newTest(t)
		pc := podConfig("p")
		id := create(t, r, runPod(t, r, pc), pc, testbin("c"))
		_, err := r.StopContainer(context.Background(), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 1})
		require.NoError(t, err)
		assert.Equal(t, runtimeapi.ContainerState_CONTAINER_CREATED, containerStatus(t, r, id).State)
		_, err = r.StopContainer(context.Background(), &runtimeapi.StopContainerRequest{ContainerId: "nope"})
		requireCode(t, err, codes.NotFound, "not found")
	})
}

func TestRemoveContainer(t *testing.T) {
	r, _ := newTest(t)
	ctx := context.Background()
	pc := podConfig("p")
	sb := runPod(t, r, pc)
	id := create(t, r, sb, pc, testbin("app"))
	start(t, r, id)

	_, err := r.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id})
	require.NoError(t, err)
	_, err = r.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	requireCode(t, err, codes.NotFound, "")
	_, err = r.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id})
	require.NoError(t, err, "removing an unknown container succeeds, as in containerd")
	// The name is free again.
	create(t, r, sb, pc, testbin("app"))
}

func TestListContainersFilters(t *testing.T) {
	r, _ := newTest(t)
	pa, pb := podConfig("a"), podConfig("b")
	sa, sb := runPod(t, r, pa), runPod(t, r, pb)
	a1 := create(t, r, sa, pa, testbin("one"))
	start(t, r, a1)
	a2 := create(t, r, sa, pa, testbin("two"))
	b1 := create(t, r, sb, pb, testbin("one", "exit", "1"))
	start(t, r, b1)

	state := func(s runtimeapi.ContainerState) *runtimeapi.ContainerStateValue {
		return &runtimeapi.ContainerStateValue{State: s}
	}
	tests := []struct {
		name   string
		filter *runtimeapi.ContainerFilter
		want   []string
	}{
		{"none", nil, []string{a1, a2, b1}},
		{"id", &runtimeapi.ContainerFilter{Id: a2}, []string{a2}},
		{"id prefix", &runtimeapi.ContainerFilter{Id: b1[:10]}, []string{b1}},
		{"unknown id", &runtimeapi.ContainerFilter{Id: "zzz"}, nil},
		{"sandbox", &runtimeapi.ContainerFilter{PodSandboxId: sa}, []string{a1, a2}},
		{"sandbox prefix", &runtimeapi.ContainerFilter{PodSandboxId: sb[:10]}, []string{b1}},
		{"running", &runtimeapi.ContainerFilter{State: state(runtimeapi.ContainerState_CONTAINER_RUNNING)}, []string{a1}},
		{"exited", &runtimeapi.ContainerFilter{State: state(runtimeapi.ContainerState_CONTAINER_EXITED)}, []string{b1}},
		{"created", &runtimeapi.ContainerFilter{State: state(runtimeapi.ContainerState_CONTAINER_CREATED)}, []string{a2}},
		{"labels", &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"container": "one"}}, []string{a1, b1}},
		{"sandbox and labels", &runtimeapi.ContainerFilter{PodSandboxId: sb, LabelSelector: map[string]string{"container": "one"}}, []string{b1}},
		{"id in other sandbox", &runtimeapi.ContainerFilter{Id: a1, PodSandboxId: sb}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := r.ListContainers(context.Background(), &runtimeapi.ListContainersRequest{Filter: tt.filter})
			require.NoError(t, err)
			var got []string
			for _, c := range resp.Containers {
				got = append(got, c.Id)
			}
			assert.Equal(t, tt.want, got)
		})
	}

	resp, err := r.ListContainers(context.Background(), &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{Id: a1}})
	require.NoError(t, err)
	c := resp.Containers[0]
	assert.Equal(t, sa, c.PodSandboxId)
	assert.Equal(t, TestbinImage, c.Image.Image)
	assert.Equal(t, imageIDFor(TestbinImage), c.ImageRef)
	assert.Equal(t, "one", c.Metadata.Name)
}

// tickerOnly hides FakeClock's AfterFunc, so scripted exits go through the
// Runtime's own timer goroutines.
type tickerOnly struct{ clock.WithTicker }

func TestClockWithoutAfterFunc(t *testing.T) {
	clk := testingclock.NewFakeClock(epoch)
	r := New(WithClock(tickerOnly{clk}), WithImages(TestbinImage))
	defer r.Close()
	_, exits := run(t, r, testbin("a", "sleep", "2"))
	_, stopped := run(t, r, testbin("b", "sleep", "2"))
	_, err := r.StopContainer(context.Background(), &runtimeapi.StopContainerRequest{ContainerId: stopped, Timeout: 1})
	require.NoError(t, err)
	_, pending := run(t, r, testbin("c", "sleep", "60"))

	clk.Step(2 * time.Second)
	// The exit now happens on the Runtime's goroutine, not inside Step.
	poll.Eventually(t, func() bool { return containerStatus(t, r, exits).State == runtimeapi.ContainerState_CONTAINER_EXITED },
		10*time.Second, 0, "the container exited")
	assert.Equal(t, epoch.Add(2*time.Second).UnixNano(), containerStatus(t, r, exits).FinishedAt)
	assert.Equal(t, int32(0), containerStatus(t, r, stopped).ExitCode)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, containerStatus(t, r, pending).State)
	// Close ends the goroutine still waiting for "sleep 60" (goleak checks).
}

func TestSetBehaviorAndHandlers(t *testing.T) {
	r, _ := newTest(t, WithRuntimeHandlers("runc", "kata"))
	require.NoError(t, r.LoadImages("example.com/app:1"))
	require.Error(t, r.LoadImages("Bad"))
	require.NoError(t, r.SetBehavior("example.com/app:1", BehaviorOf(ExitsAfter(0, 9))))
	require.Error(t, r.SetBehavior("", nil))

	pc := podConfig("p")
	resp, err := r.RunPodSandbox(context.Background(), &runtimeapi.RunPodSandboxRequest{Config: pc, RuntimeHandler: "kata"})
	require.NoError(t, err)
	assert.Equal(t, "kata", sandboxStatus(t, r, resp.PodSandboxId).RuntimeHandler)
	id := create(t, r, resp.PodSandboxId, pc, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: "example.com/app:1"}})
	start(t, r, id)
	assert.Equal(t, int32(9), containerStatus(t, r, id).ExitCode)
}

func TestImageDigests(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	r, _ := newTest(t, WithImages("example.com/app@"+digest))
	require.NoError(t, r.TagImage("example.com/app@"+digest, "example.com/app:v1"))
	st, err := r.ImageStatus(context.Background(), &runtimeapi.ImageStatusRequest{Image: spec("example.com/app:v1")})
	require.NoError(t, err)
	assert.Equal(t, []string{"example.com/app:v1"}, st.Image.RepoTags)
	assert.Equal(t, []string{"example.com/app@" + digest}, st.Image.RepoDigests)

	_, id := run(t, r, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: "example.com/app:v1"}})
	cs := containerStatus(t, r, id)
	// containerd 1.6 reports the repo digest as ImageRef when there is one.
	assert.Equal(t, "example.com/app@"+digest, cs.ImageRef)
	assert.Equal(t, "example.com/app:v1", cs.Image.Image)
}

// WithCompactConfigs keeps what statuses read and drops the rest of the
// config once the Behavior has seen it.
func TestCompactConfigs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     []Option
		wantEnvs bool // and the rest of the full configs
	}{
		{"full config by default", nil, true},
		{"WithCompactConfigs", []Option{WithCompactConfigs()}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen string
			r, _ := newTest(t, append(tc.opts, WithBehavior(TestbinImage, func(cfg *runtimeapi.ContainerConfig) Program {
				seen = envOf(cfg)["GREETING"]
				return TestbinBehavior(cfg)
			}))...)
			cfg := testbin("web", "sleep")
			cfg.Envs = []*runtimeapi.KeyValue{{Key: "GREETING", Value: []byte("hello")}}
			cfg.Annotations = map[string]string{"io.kubernetes.container.hash": "abc"}
			cfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: "/tmp/data"}}
			sbID, id := run(t, r, cfg)
			assert.Equal(t, "hello", seen, "the Behavior sees the whole config")

			st := containerStatus(t, r, id)
			assert.Equal(t, "web", st.GetMetadata().GetName())
			assert.Equal(t, TestbinImage, st.GetImage().GetImage())
			assert.Equal(t, map[string]string{"container": "web"}, st.GetLabels())
			assert.Equal(t, cfg.Annotations, st.GetAnnotations())
			assert.Len(t, st.GetMounts(), 1)
			verbose, err := r.ContainerStatus(context.Background(), &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
			require.NoError(t, err)
			assert.Equal(t, tc.wantEnvs, strings.Contains(verbose.Info["info"], "GREETING"), verbose.Info["info"])

			sb := sandboxStatus(t, r, sbID)
			assert.Equal(t, "pod-web", sb.GetMetadata().GetName())
			assert.Equal(t, map[string]string{"app": "pod-web"}, sb.GetLabels())
			sbVerbose, err := r.PodSandboxStatus(context.Background(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sbID, Verbose: true})
			require.NoError(t, err)
			assert.Equal(t, tc.wantEnvs, strings.Contains(sbVerbose.Info["info"], `"hostname"`), "the sandbox's hostname is dropped too")
		})
	}
}
