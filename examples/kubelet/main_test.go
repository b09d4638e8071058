package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/nodekit-dev/nodekit/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseFlagsRejectsBadInput(t *testing.T) {
	for args, want := range map[string][]string{
		"--runtime: invalid value \"docker\"":                                   {"--runtime", "docker"},
		"--container-runtime-endpoint: endpoint \"tcp://x\": only unix sockets": {"--container-runtime-endpoint", "tcp://x"},
		"flag provided but not defined: -bogus":                                 {"--bogus"},
		"--relist-period: invalid value 0s":                                     {"--relist-period", "0s"},
	} {
		_, err := parseFlags(want)
		require.Error(t, err, want)
		assert.Contains(t, err.Error(), args)
	}
	cfg, err := parseFlags([]string{"--hostname-override", "Node-A"})
	require.NoError(t, err)
	assert.Equal(t, "node-a", cfg.hostname)
	assert.Equal(t, "/etc/kubernetes/manifests", cfg.manifestPath)
	assert.Equal(t, runtime.DefaultRuntimeEndpoint, cfg.endpoint)
}

// TestAgentRunsManifestsOnFakeRuntime: a good manifest runs next to a bad
// one, and a removed manifest's pod is killed and removed.
func TestAgentRunsManifestsOnFakeRuntime(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	write("good.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: good}\nspec:\n  containers:\n  - {name: c, image: nodekit.local/testbin:1, args: [sleep]}\n")
	write("bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec:\n  containers:\n  - {name: c, image: nodekit.local/testbin:1, bogusField: 1}\n")
	write(".hidden.yaml", "not: a pod")

	cfg, err := parseFlags([]string{"--runtime", "fake", "--pod-manifest-path", dir, "--hostname-override", "n1", "--pod-logs-dir", t.TempDir()})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	client, closeRuntime, err := connect(ctx, cfg, log)
	require.NoError(t, err)
	defer closeRuntime()
	mgr, err := runtime.NewManager(runtime.ManagerConfig{Runtime: client, Images: client, PodLogsDir: cfg.podLogsDir})
	require.NoError(t, err)
	a := &agent{cfg: cfg, log: log, mgr: mgr, known: map[string]*trackedPod{}}

	a.syncAll(ctx)
	pods, err := mgr.GetPods(ctx, false)
	require.NoError(t, err)
	require.Len(t, pods, 1, "only the good manifest runs")
	assert.Equal(t, "good-n1", pods[0].Name)
	assert.Len(t, pods[0].Containers, 1)

	require.NoError(t, os.Remove(filepath.Join(dir, "good.yaml")))
	a.syncAll(ctx)
	pods, err = mgr.GetPods(ctx, true)
	require.NoError(t, err)
	assert.Empty(t, pods, "removed manifest: pod killed and removed")
}
