//go:build integration

package runtime_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit-dev/nodekit/internal/testenv"
)

// TestSandboxImageOnContainerd: containerd protects the pause image it
// uses from image GC: 1.x names it in its status (SandboxImage), 2.x does
// not but pins the image.
func TestSandboxImageOnContainerd(t *testing.T) {
	client := testenv.NeedContainerd(t).Dial(t)
	img, err := client.SandboxImage(context.Background())
	require.NoError(t, err)
	if img != "" {
		assert.Equal(t, pauseImage, img)
		return
	}
	st, err := client.ImageStatus(context.Background(), &runtimeapi.ImageSpec{Image: pauseImage}, false)
	require.NoError(t, err)
	require.NotNil(t, st.GetImage(), "%s imported", pauseImage)
	assert.True(t, st.GetImage().GetPinned(), "a runtime that does not name its sandbox image pins it")
}

// TestFilesystemMountpointsOnContainerd: containerd (1.6 and 2.x) keeps
// images in its overlayfs snapshotter's directory and lists no container
// filesystem apart.
func TestFilesystemMountpointsOnContainerd(t *testing.T) {
	client := testenv.NeedContainerd(t).Dial(t)
	images, containers, err := client.FilesystemMountpoints(context.Background())
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(images, "io.containerd.snapshotter.v1.overlayfs"), "images in %q", images)
	assert.DirExists(t, images)
	assert.Empty(t, containers)
}
