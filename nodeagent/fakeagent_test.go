package nodeagent_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/nodeagent"
	"github.com/nodekit-dev/nodekit/nodestatus"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

// fakeAgent is an agent running on a fake runtime the test can script,
// on the real clock, and the CRI client it uses.
type fakeAgent struct {
	*nodeagent.Agent
	fake *fake.Runtime
	cri  *runtime.Client
}

// startFakeAgent runs an agent as node n1 on a fake runtime served
// in-process (not on this host), with static pods from manifests,
// re-read every 100ms, and a declared machine; edit may change the
// Config first. The agent stops when the test ends, then the runtime.
func startFakeAgent(t *testing.T, ctx context.Context, manifests string, edit ...func(*nodeagent.Config)) *fakeAgent {
	t.Helper()
	f, client := serveFakeRuntime(t, ctx)
	cfg := nodeagent.Config{NodeName: "n1", NodeIP: "127.0.0.1", RootDir: t.TempDir(), PodLogsDir: t.TempDir(),
		ManifestPath: manifests, FileCheckFrequency: 100 * time.Millisecond, CgroupsPerQOS: ptr.To(false),
		Runtime: client, RuntimeOnHost: ptr.To(false),
		Machine: &nodestatus.MachineInfo{NumCPU: 4, MemoryCapacity: 8 << 30, RootfsCapacity: 100 << 30, MachineID: "m1"}}
	for _, e := range edit {
		e(&cfg)
	}
	a, err := nodeagent.New(ctx, cfg)
	require.NoError(t, err)
	runAgent(t, ctx, a)
	return &fakeAgent{Agent: a, fake: f, cri: client}
}

// serveFakeRuntime serves a fake runtime (the pause and test images) on
// a socket until the test ends, and returns it and a client dialled to it.
func serveFakeRuntime(t *testing.T, ctx context.Context) (*fake.Runtime, *runtime.Client) {
	t.Helper()
	f := fake.New(fake.WithImages(fake.PauseImage, fake.TestbinImage))
	endpoint := "unix://" + filepath.Join(t.TempDir(), "fake.sock")
	stopServing, err := f.Start(endpoint)
	require.NoError(t, err)
	client, err := runtime.Dial(ctx, endpoint)
	require.NoError(t, err)
	t.Cleanup(func() { client.Close(context.Background()); stopServing(); f.Close() })
	return f, client
}

// podNamed returns the agent's pod with this name and its status, or nil.
func podNamed(a *nodeagent.Agent, name string) *v1.Pod {
	for _, p := range a.Pods() {
		if p.Name == name {
			return &p
		}
	}
	return nil
}

// running says the agent reports the pod with this name Running.
func running(a *nodeagent.Agent, name string) func() bool {
	return func() bool { p := podNamed(a, name); return p != nil && p.Status.Phase == v1.PodRunning }
}
