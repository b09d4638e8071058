package main

import (
	"bytes"
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// syncBuffer is a bytes.Buffer safe for the logger and the test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"unknown flag", []string{"--nope"}, 2, "flag provided but not defined: -nope"},
		{"stray argument", []string{"serve"}, 2, `unexpected argument "serve"`},
		{"empty image", []string{"--image", ""}, 2, "empty image reference"},
		{"bad image", []string{"--image", "Not A Ref"}, 2, "invalid reference format"},
		{"tcp endpoint", []string{"--listen", "tcp://127.0.0.1:1"}, 1, "want unix:///absolute/path.sock"},
		{"relative endpoint", []string{"--listen", "unix://fake.sock"}, 1, "not absolute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out syncBuffer
			assert.Equal(t, tt.code, run(context.Background(), tt.args, &out))
			assert.Contains(t, out.String(), tt.msg)
		})
	}
}

func TestServes(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "fake.sock")
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--listen", "unix://" + sock, "--image", "busybox", "--image", "nginx:1.25"}, &out)
	}()

	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	images, err := runtimeapi.NewImageServiceClient(conn).ListImages(wctx, &runtimeapi.ListImagesRequest{}, grpc.WaitForReady(true))
	require.NoError(t, err)
	var tags []string
	for _, im := range images.Images {
		tags = append(tags, im.RepoTags...)
	}
	assert.ElementsMatch(t, []string{
		"nodekit.local/pause:1", "nodekit.local/testbin:1",
		"docker.io/library/busybox:latest", "docker.io/library/nginx:1.25",
	}, tags)

	cancel()
	assert.Equal(t, 0, <-done)
	assert.Contains(t, out.String(), "serving fake CRI runtime")
	assert.Contains(t, out.String(), "stopped")
}
