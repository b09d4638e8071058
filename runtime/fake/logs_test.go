package fake

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// runLogged runs cfg in a pod with a log directory and returns the
// container ID and its log file.
func runLogged(t *testing.T, r *Runtime, cfg *runtimeapi.ContainerConfig) (string, string) {
	t.Helper()
	pc := podConfig("p-" + cfg.Metadata.Name)
	pc.LogDirectory = filepath.Join(t.TempDir(), "pods", "uid")
	cfg.LogPath = filepath.Join(cfg.Metadata.Name, "0.log")
	id := create(t, r, runPod(t, r, pc), pc, cfg)
	start(t, r, id)
	return id, filepath.Join(pc.LogDirectory, cfg.LogPath)
}

func readLog(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func TestLogFiles(t *testing.T) {
	ts := epoch.Format(time.RFC3339Nano)
	later := epoch.Add(3 * time.Second).Format(time.RFC3339Nano)
	tests := []struct {
		name string
		cfg  *runtimeapi.ContainerConfig
		want []string
	}{
		{"echo", testbin("echo", "echo", "hello", "world"), []string{ts + " stdout F hello world"}},
		{"stderr", testbin("err", "stderr", "oh", "no"), []string{ts + " stderr F oh no"}},
		{"exit", testbin("exit", "exit", "3"), []string{ts + " stdout F exiting with 3"}},
		{"unknown", testbin("unknown", "zap"), []string{ts + ` stderr F testbin: unknown mode "zap"`}},
		{"serve then stop", testbin("serve"), []string{
			ts + " stdout F listening on 127.0.0.1:8080",
			later + " stdout F got terminated, exiting",
		}},
		{"sleep prints nothing", testbin("sleep", "sleep"), []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, clk := newTest(t)
			id, path := runLogged(t, r, tt.cfg)
			clk.Step(3 * time.Second)
			_, err := r.StopContainer(context.Background(), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 10})
			require.NoError(t, err)
			assert.Equal(t, tt.want, readLog(t, path))
		})
	}
}

func TestLogPortFromEnv(t *testing.T) {
	r, _ := newTest(t)
	cfg := testbin("serve")
	cfg.Envs = []*runtimeapi.KeyValue{{Key: "PORT", Value: []byte("9090")}}
	_, path := runLogged(t, r, cfg)
	assert.Equal(t, []string{epoch.Format(time.RFC3339Nano) + " stdout F listening on 127.0.0.1:9090"}, readLog(t, path))
}

func TestLogRotation(t *testing.T) {
	r, _ := newTest(t)
	id, path := runLogged(t, r, testbin("serve"))
	require.NoError(t, os.Rename(path, path+".1"))
	_, err := r.ReopenContainerLog(context.Background(), &runtimeapi.ReopenContainerLogRequest{ContainerId: id})
	require.NoError(t, err)
	_, err = os.Stat(path)
	require.NoError(t, err, "reopen creates a new file")

	_, err = r.StopContainer(context.Background(), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 1})
	require.NoError(t, err)
	assert.Len(t, readLog(t, path), 1, "later lines go to the new file")
	_, err = r.ReopenContainerLog(context.Background(), &runtimeapi.ReopenContainerLogRequest{ContainerId: id})
	requireCode(t, err, codes.Unknown, "container is not running")
}

func TestNoLogDirectory(t *testing.T) {
	r, _ := newTest(t)
	cfg := testbin("echo", "echo", "x")
	cfg.LogPath = "echo.log"
	_, id := run(t, r, cfg)
	assert.Equal(t, "echo.log", containerStatus(t, r, id).LogPath)
	_, err := os.Stat("echo.log")
	assert.True(t, os.IsNotExist(err), "nothing written relative to the working directory")
}
