package runtimetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"

	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit-dev/nodekit/runtime"
)

// Target is the runtime under test.
type Target struct {
	Client *runtime.Client
	// TestImage behaves like nodekit.local/testbin:1.
	TestImage string
	// RemovableImage is removed by the image tests; LoadImage puts it back.
	RemovableImage string
	LoadImage      func(t *testing.T, ref string)
	// CgroupParent returns the cgroup parent for a sandbox of this pod UID
	// ("" for none); CleanupCgroup is called after the sandbox is removed.
	CgroupParent  func(uid string) string
	CleanupCgroup func(t *testing.T, uid string)
	// LogDir is a directory for container logs (default t.TempDir()).
	LogDir string
	// Timeout bounds waits for state changes (default 20s).
	Timeout time.Duration
}

type suite struct {
	t   *testing.T
	tg  Target
	ctx context.Context
}

// Run runs the contract suite; newTarget is called once per subtest.
func Run(t *testing.T, newTarget func(t *testing.T) Target) {
	tests := []struct {
		name string
		fn   func(s *suite)
	}{
		{"Version", testVersion},
		{"Status", testStatus},
		{"SandboxLifecycle", testSandboxLifecycle},
		{"HostNetworkSandbox", testHostNetworkSandbox},
		{"ContainerLifecycle", testContainerLifecycle},
		{"ExitCodes", testExitCodes},
		{"ExecSync", testExecSync},
		{"ExecSyncTimeout", testExecSyncTimeout},
		{"ListFilters", testListFilters},
		{"NotFound", testNotFound},
		{"StopSandboxStopsContainers", testStopSandboxStopsContainers},
		{"RemoveSandboxRemovesContainers", testRemoveSandboxRemovesContainers},
		{"CreateInStoppedSandbox", testCreateInStoppedSandbox},
		{"DuplicateNames", testDuplicateNames},
		{"ContainerLogs", testContainerLogs},
		{"Images", testImages},
		{"RemoveImage", testRemoveImage},
		{"ContainerEvents", testContainerEvents},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tg := newTarget(t)
			if tg.Timeout == 0 {
				tg.Timeout = 20 * time.Second
			}
			if tg.LogDir == "" {
				tg.LogDir = t.TempDir()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			tc.fn(&suite{t: t, tg: tg, ctx: ctx})
		})
	}
}

// sandbox runs a sandbox and registers its removal.
func (s *suite) sandbox(name string, hostNetwork bool) (string, *runtimeapi.PodSandboxConfig) {
	s.t.Helper()
	uid := randomUID()
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "contract", Uid: uid},
		Labels:       map[string]string{"contract-test": name, kc.LabelPodUID: uid},
		Annotations:  map[string]string{"contract/annotation": "yes"},
		LogDirectory: fmt.Sprintf("%s/%s", s.tg.LogDir, uid),
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER},
		}},
	}
	if hostNetwork {
		cfg.Linux.SecurityContext.NamespaceOptions.Network = runtimeapi.NamespaceMode_NODE
	} else {
		cfg.Hostname = name
	}
	if s.tg.CgroupParent != nil {
		cfg.Linux.CgroupParent = s.tg.CgroupParent(uid)
	}
	id, err := s.tg.Client.RunPodSandbox(s.ctx, cfg, "")
	require.NoError(s.t, err, "RunPodSandbox")
	s.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(s.t, s.tg.Client.StopPodSandbox(ctx, id), "cleanup: StopPodSandbox")
		require.NoError(s.t, s.tg.Client.RemovePodSandbox(ctx, id), "cleanup: RemovePodSandbox")
		if s.tg.CleanupCgroup != nil {
			s.tg.CleanupCgroup(s.t, uid)
		}
	})
	return id, cfg
}

// container creates a testbin container with args in the sandbox.
func (s *suite) container(sandboxID string, sandboxCfg *runtimeapi.PodSandboxConfig, name string, args ...string) string {
	s.t.Helper()
	id, err := s.tg.Client.CreateContainer(s.ctx, sandboxID, s.containerConfig(name, args...), sandboxCfg)
	require.NoError(s.t, err, "CreateContainer %s", name)
	return id
}

func (s *suite) containerConfig(name string, args ...string) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: s.tg.TestImage},
		Args:     args,
		Envs:     []*runtimeapi.KeyValue{{Key: "PORT", Value: []byte("0")}},
		Labels:   map[string]string{"contract-container": name},
		LogPath:  name + ".log",
		Linux:    &runtimeapi.LinuxContainerConfig{Resources: &runtimeapi.LinuxContainerResources{CpuShares: 2}},
	}
}

func (s *suite) started(sandboxID string, cfg *runtimeapi.PodSandboxConfig, name string, args ...string) string {
	s.t.Helper()
	id := s.container(sandboxID, cfg, name, args...)
	require.NoError(s.t, s.tg.Client.StartContainer(s.ctx, id), "StartContainer %s", name)
	return id
}

func (s *suite) status(id string) *runtimeapi.ContainerStatus {
	s.t.Helper()
	r, err := s.tg.Client.ContainerStatus(s.ctx, id, false)
	require.NoError(s.t, err, "ContainerStatus")
	return r.Status
}

// waitState polls until the container reaches state (real runtimes change
// state asynchronously; the fake is immediate).
func (s *suite) waitState(id string, state runtimeapi.ContainerState) *runtimeapi.ContainerStatus {
	s.t.Helper()
	deadline := time.Now().Add(s.tg.Timeout)
	for {
		st := s.status(id)
		if st.State == state {
			return st
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("container %s: state %s after %s, want %s (reason %q, exit %d)", id, st.State, s.tg.Timeout, state, st.Reason, st.ExitCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func randomUID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "contract-" + hex.EncodeToString(b)
}
