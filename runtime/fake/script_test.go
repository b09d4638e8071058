package fake

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestInjectError(t *testing.T) {
	boom := status.Error(codes.Unavailable, "boom")
	list := func(r *Runtime) error {
		_, err := r.ListContainers(context.Background(), &runtimeapi.ListContainersRequest{})
		return err
	}
	tests := []struct {
		name  string
		times int
		calls int
		want  []bool // whether each call fails
	}{
		{"once", 1, 3, []bool{true, false, false}},
		{"twice", 2, 3, []bool{true, true, false}},
		{"until cleared", 0, 3, []bool{true, true, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := newTest(t)
			r.InjectError("ListContainers", boom, tt.times)
			for i, fails := range tt.want {
				err := list(r)
				if fails {
					assert.Equal(t, boom, err, "call %d", i)
				} else {
					assert.NoError(t, err, "call %d", i)
				}
			}
			_, err := r.ListPodSandbox(context.Background(), &runtimeapi.ListPodSandboxRequest{})
			assert.NoError(t, err, "other methods are unaffected")
			r.ClearInjections()
			assert.NoError(t, list(r))
			assert.Equal(t, tt.calls+1, r.Calls("ListContainers"), "failed calls count too")
		})
	}
}

func TestInjectUnimplementedEvents(t *testing.T) {
	r, _ := newTest(t)
	r.InjectError("GetContainerEvents", status.Error(codes.Unimplemented, "unknown method GetContainerEvents"), 0)
	err := r.GetContainerEvents(&runtimeapi.GetEventsRequest{}, &eventStream{ctx: context.Background()})
	requireCode(t, err, codes.Unimplemented, "")
}

func TestUnknownMethodPanics(t *testing.T) {
	r, _ := newTest(t)
	assert.PanicsWithValue(t, `fake: unknown CRI method "ListContainer"`, func() { r.InjectError("ListContainer", errors.New("x"), 1) })
	assert.Panics(t, func() { r.SetLatency("Nope", time.Second) })
	assert.Zero(t, r.Calls("Nope"))
}

func TestSetLatency(t *testing.T) {
	r, clk := newTest(t)
	r.SetLatency("Version", 2*time.Second)
	call := func(ctx context.Context) <-chan error {
		return async(func() (*runtimeapi.VersionResponse, error) {
			return r.Version(ctx, &runtimeapi.VersionRequest{})
		})
	}

	w := clk.Waiters()
	done := call(context.Background())
	awaitWaiters(t, clk, w+1)
	clk.Step(time.Second)
	select {
	case err := <-done:
		t.Fatalf("returned before its latency: %v", err)
	default:
	}
	clk.Step(time.Second)
	require.NoError(t, <-done)

	ctx, cancel := context.WithCancel(context.Background())
	done = call(ctx)
	cancel()
	requireCode(t, <-done, codes.Canceled, "")

	// A failure is delayed too.
	r.InjectError("Version", status.Error(codes.Internal, "late"), 1)
	w = clk.Waiters()
	done = call(context.Background())
	awaitWaiters(t, clk, w+1)
	clk.Step(2 * time.Second)
	requireCode(t, <-done, codes.Internal, "late")

	r.ClearInjections()
	_, err := r.Version(context.Background(), &runtimeapi.VersionRequest{})
	require.NoError(t, err, "no latency after ClearInjections")
	assert.Equal(t, 4, r.Calls("Version"))
}

func TestRuntimeInfo(t *testing.T) {
	r, _ := newTest(t, WithRuntimeName("x-rt"), WithRuntimeVersion("9.9"))
	ctx := context.Background()

	v, err := r.Version(ctx, &runtimeapi.VersionRequest{})
	require.NoError(t, err)
	assert.Equal(t, "x-rt", v.RuntimeName)
	assert.Equal(t, "9.9", v.RuntimeVersion)
	assert.Equal(t, "v1", v.RuntimeApiVersion)
	assert.Equal(t, "nodekit-fake", New().version.RuntimeName)

	conds := func() map[string]bool {
		st, err := r.Status(ctx, &runtimeapi.StatusRequest{})
		require.NoError(t, err)
		m := map[string]bool{}
		for _, c := range st.Status.Conditions {
			m[c.Type] = c.Status
		}
		return m
	}
	assert.Equal(t, map[string]bool{runtimeapi.RuntimeReady: true, runtimeapi.NetworkReady: true}, conds())
	r.SetRuntimeCondition(runtimeapi.NetworkReady, false, "NetworkPluginNotReady", "cni config uninitialized")
	r.SetRuntimeCondition("Extra", true, "", "")
	assert.Equal(t, map[string]bool{runtimeapi.RuntimeReady: true, runtimeapi.NetworkReady: false, "Extra": true}, conds())

	rc, err := r.RuntimeConfig(ctx, &runtimeapi.RuntimeConfigRequest{})
	require.NoError(t, err)
	assert.Equal(t, runtimeapi.CgroupDriver_CGROUPFS, rc.Linux.CgroupDriver)

	_, err = r.UpdateRuntimeConfig(ctx, &runtimeapi.UpdateRuntimeConfigRequest{RuntimeConfig: &runtimeapi.RuntimeConfig{
		NetworkConfig: &runtimeapi.NetworkConfig{PodCidr: "10.0.0.0/24"}}})
	require.NoError(t, err)
	assert.Equal(t, "10.0.0.0/24", r.PodCIDR())
}

func TestStats(t *testing.T) {
	r, clk := newTest(t)
	ctx := context.Background()
	clk.Step(time.Minute)
	sb, id := run(t, r, testbin("app"))

	cs, err := r.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: id})
	require.NoError(t, err)
	assert.Equal(t, id, cs.Stats.Attributes.Id)
	assert.Equal(t, epoch.Add(time.Minute).UnixNano(), cs.Stats.Cpu.Timestamp)
	assert.Zero(t, cs.Stats.Memory.WorkingSetBytes.Value)

	require.NoError(t, r.SetContainerStats(id, &runtimeapi.ContainerStats{
		Memory: &runtimeapi.MemoryUsage{WorkingSetBytes: &runtimeapi.UInt64Value{Value: 42}}}))
	list, err := r.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{Filter: &runtimeapi.ContainerStatsFilter{PodSandboxId: sb}})
	require.NoError(t, err)
	require.Len(t, list.Stats, 1)
	assert.Equal(t, uint64(42), list.Stats[0].Memory.WorkingSetBytes.Value)
	assert.Equal(t, id, list.Stats[0].Attributes.Id, "attributes filled in")
	require.Error(t, r.SetContainerStats("nope", nil))

	ps, err := r.PodSandboxStats(ctx, &runtimeapi.PodSandboxStatsRequest{PodSandboxId: sb})
	require.NoError(t, err)
	assert.Equal(t, sb, ps.Stats.Attributes.Id)
	require.Len(t, ps.Stats.Linux.Containers, 1)
	require.NoError(t, r.SetPodSandboxStats(sb, &runtimeapi.PodSandboxStats{Linux: &runtimeapi.LinuxPodSandboxStats{}}))
	lps, err := r.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{})
	require.NoError(t, err)
	require.Len(t, lps.Stats, 1)
	assert.Nil(t, lps.Stats[0].Linux.Cpu)

	_, err = r.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb})
	require.NoError(t, err)
	_, err = r.PodSandboxStats(ctx, &runtimeapi.PodSandboxStatsRequest{PodSandboxId: sb})
	requireCode(t, err, codes.Unavailable, "not in ready state")
	lps, err = r.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{})
	require.NoError(t, err)
	assert.Empty(t, lps.Stats)
	_, err = r.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: "nope"})
	requireCode(t, err, codes.NotFound, "")
	pc := podConfig("q")
	created := create(t, r, runPod(t, r, pc), pc, testbin("created"))
	_, err = r.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: created})
	requireCode(t, err, codes.Unknown, "unexpected metrics response")
}

func TestClosed(t *testing.T) {
	r, _ := newTest(t)
	require.NoError(t, r.Close())
	require.NoError(t, r.Close())
	_, err := r.Version(context.Background(), &runtimeapi.VersionRequest{})
	requireCode(t, err, codes.Unavailable, "closed")
}

func TestNewPanicsOnBadReference(t *testing.T) {
	assert.PanicsWithValue(t, `fake: WithImages: image "Bad Ref": invalid reference format`, func() { New(WithImages("Bad Ref")) })
	assert.Panics(t, func() { New(WithBehavior("", DefaultBehavior)) })
}
