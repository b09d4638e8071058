package fake

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func spec(ref string) *runtimeapi.ImageSpec { return &runtimeapi.ImageSpec{Image: ref} }

func TestNormalizeRef(t *testing.T) {
	tests := []struct{ in, want string }{
		{"busybox", "docker.io/library/busybox:latest"},
		{"busybox:1.36", "docker.io/library/busybox:1.36"},
		{"library/busybox", "docker.io/library/busybox:latest"},
		{"index.docker.io/foo/bar", "docker.io/foo/bar:latest"},
		{"nodekit.local/testbin:1", "nodekit.local/testbin:1"},
		{"localhost/x", "localhost/x:latest"},
		{"localhost:5000/x:2", "localhost:5000/x:2"},
		{"busybox@sha256:abc", "docker.io/library/busybox@sha256:abc"},
	}
	for _, tt := range tests {
		got, err := normalizeRef(tt.in)
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
	for _, bad := range []string{"", "Busybox", "x:", "a b", "x@md5:1"} {
		_, err := normalizeRef(bad)
		assert.Error(t, err, bad)
	}
}

func TestImages(t *testing.T) {
	r, _ := newTest(t, WithImages("busybox"))
	ctx := context.Background()
	id := imageIDFor(TestbinImage)

	list, err := r.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	require.NoError(t, err)
	require.Len(t, list.Images, 3)
	// Like containerd 1.6, the filter is ignored.
	filtered, err := r.ListImages(ctx, &runtimeapi.ListImagesRequest{Filter: &runtimeapi.ImageFilter{Image: spec("busybox")}})
	require.NoError(t, err)
	assert.Len(t, filtered.Images, 3)

	tests := []struct {
		name, ref string
		wantID    string
	}{
		{"tag", TestbinImage, id},
		{"id", id, id},
		{"short name", "busybox", imageIDFor("docker.io/library/busybox:latest")},
		{"full name", "docker.io/library/busybox:latest", imageIDFor("docker.io/library/busybox:latest")},
		{"absent", "nginx", ""},
		{"absent id", imageIDFor("nginx"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := r.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: spec(tt.ref)})
			require.NoError(t, err, "absent images are not an error")
			if tt.wantID == "" {
				assert.Nil(t, resp.Image)
				return
			}
			require.NotNil(t, resp.Image)
			assert.Equal(t, tt.wantID, resp.Image.Id)
			assert.NotZero(t, resp.Image.Size)
		})
	}

	st, err := r.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: spec(TestbinImage)})
	require.NoError(t, err)
	assert.Equal(t, []string{TestbinImage}, st.Image.RepoTags)

	fs, err := r.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	require.NoError(t, err)
	require.Len(t, fs.ImageFilesystems, 1)
	assert.Equal(t, uint64(3), fs.ImageFilesystems[0].InodesUsed.Value)
	assert.Equal(t, epoch.UnixNano(), fs.ImageFilesystems[0].Timestamp)
	custom := &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{{Timestamp: 1}}}
	r.SetImageFsInfo(custom)
	fs, err = r.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	require.NoError(t, err)
	assert.Same(t, custom, fs)
}

// The image filesystem is on this machine (#28): consumers statfs its
// mountpoint, which writable layers share, and its used bytes add up the
// images listed.
func TestImageFsMountpoint(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		opts []Option
		want string
	}{
		{"default: the OS temp dir", nil, os.TempDir()},
		{"WithImageFsMountpoint", []Option{WithImageFsMountpoint(dir)}, dir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := newTest(t, tt.opts...)
			ctx := context.Background()
			fs, err := r.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
			require.NoError(t, err)
			require.Len(t, fs.ImageFilesystems, 1)
			assert.Equal(t, tt.want, fs.ImageFilesystems[0].FsId.Mountpoint)
			assert.DirExists(t, fs.ImageFilesystems[0].FsId.Mountpoint)

			list, err := r.ListImages(ctx, &runtimeapi.ListImagesRequest{})
			require.NoError(t, err)
			var used uint64
			for _, im := range list.Images {
				used += im.Size
			}
			assert.Equal(t, used, fs.ImageFilesystems[0].UsedBytes.Value)

			cfg := podConfig("p")
			id := create(t, r, runPod(t, r, cfg), cfg, testbin("c", "sleep", "60"))
			start(t, r, id)
			cs, err := r.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: id})
			require.NoError(t, err)
			assert.Equal(t, tt.want, cs.Stats.WritableLayer.FsId.Mountpoint)
		})
	}
}

func TestRemoveImage(t *testing.T) {
	r, _ := newTest(t)
	ctx := context.Background()
	require.NoError(t, r.TagImage(TestbinImage, "nodekit.local/alias:1"))
	st, err := r.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: spec("nodekit.local/alias:1")})
	require.NoError(t, err)
	assert.Equal(t, []string{TestbinImage, "nodekit.local/alias:1"}, st.Image.RepoTags)

	// Removing by one tag removes the image and all its tags; again is fine.
	for range 2 {
		_, err = r.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: spec("nodekit.local/alias:1")})
		require.NoError(t, err)
	}
	for _, ref := range []string{TestbinImage, "nodekit.local/alias:1"} {
		st, err := r.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: spec(ref)})
		require.NoError(t, err)
		assert.Nil(t, st.Image, ref)
	}
	list, err := r.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	require.NoError(t, err)
	require.Len(t, list.Images, 1)
	assert.Equal(t, []string{PauseImage}, list.Images[0].RepoTags)

	assert.Error(t, r.TagImage("nope", "x"))
}

func TestPullImage(t *testing.T) {
	r, clk := newTest(t)
	ctx := context.Background()
	pull := func(ctx context.Context, ref string) (string, error) {
		resp, err := r.PullImage(ctx, &runtimeapi.PullImageRequest{Image: spec(ref)})
		if err != nil {
			return "", err
		}
		return resp.ImageRef, nil
	}

	got, err := pull(ctx, TestbinImage)
	require.NoError(t, err)
	assert.Equal(t, imageIDFor(TestbinImage), got, "present images answer their ID")

	_, err = pull(ctx, "nginx")
	requireCode(t, err, codes.NotFound,
		`failed to pull and unpack image "docker.io/library/nginx:latest": failed to resolve reference "docker.io/library/nginx:latest"`)

	r.AllowPull("nginx:1.25")
	got, err = pull(ctx, "docker.io/library/nginx:1.25")
	require.NoError(t, err)
	assert.Equal(t, imageIDFor("docker.io/library/nginx:1.25"), got)
	st, err := r.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: spec("nginx:1.25")})
	require.NoError(t, err)
	assert.Equal(t, got, st.Image.Id)

	t.Run("delay", func(t *testing.T) {
		r.SetPullBehavior("slow", 3*time.Second, nil)
		w := clk.Waiters()
		done := make(chan error, 1)
		go func() { _, err := pull(ctx, "slow"); done <- err }()
		awaitWaiters(t, clk, w+1)
		clk.Step(3 * time.Second)
		require.NoError(t, <-done)
	})
	t.Run("scripted failure", func(t *testing.T) {
		want := status.Error(codes.Unavailable, "registry down")
		r.SetPullBehavior("broken", 0, want)
		_, err := pull(ctx, "broken")
		assert.Equal(t, want, err)
		_, err = pull(ctx, "Bad Ref")
		requireCode(t, err, codes.Unknown, "failed to parse image reference")
	})
	t.Run("cancelled during delay", func(t *testing.T) {
		r.SetPullBehavior("slower", time.Hour, nil)
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { _, err := pull(cctx, "slower"); done <- err }()
		cancel()
		err := <-done
		assert.True(t, errors.Is(err, context.Canceled) || status.Code(err) == codes.Canceled, "%v", err)
	})
}

func TestPullAnyImage(t *testing.T) {
	ctx := context.Background()
	r := New(WithAnyImagePullable())
	t.Cleanup(func() { r.Close() })
	resp, err := r.PullImage(ctx, &runtimeapi.PullImageRequest{Image: spec("registry.example/app:2")})
	require.NoError(t, err, "any image pulls")
	assert.Equal(t, imageIDFor("registry.example/app:2"), resp.ImageRef)
	want := status.Error(codes.Unavailable, "registry down")
	r.SetPullBehavior("broken", 0, want)
	_, err = r.PullImage(ctx, &runtimeapi.PullImageRequest{Image: spec("broken")})
	assert.Equal(t, want, err, "an image's own rule still wins")
}
