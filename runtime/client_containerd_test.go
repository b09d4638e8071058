//go:build integration

package runtime_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodekit-dev/nodekit/internal/testenv"
)

// TestSandboxImageOnContainerd: containerd says which pause image it uses.
func TestSandboxImageOnContainerd(t *testing.T) {
	client := testenv.NeedContainerd(t).Dial(t)
	img, err := client.SandboxImage(context.Background())
	require.NoError(t, err)
	assert.Equal(t, pauseImage, img)
}

// TestFilesystemMountpointsOnContainerd: containerd 1.6 keeps images
// in its overlayfs snapshotter's directory and lists no container
// filesystem apart.
func TestFilesystemMountpointsOnContainerd(t *testing.T) {
	client := testenv.NeedContainerd(t).Dial(t)
	images, containers, err := client.FilesystemMountpoints(context.Background())
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(images, "io.containerd.snapshotter.v1.overlayfs"), "images in %q", images)
	assert.DirExists(t, images)
	assert.Empty(t, containers)
}
