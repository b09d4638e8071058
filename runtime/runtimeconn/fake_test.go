//go:build fakeruntime

package runtimeconn_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodekit-dev/nodekit/runtime/runtimeconn"
)

// With -tags fakeruntime, auto falls back to the in-process fake when the
// remote runtime does not answer, and fake serves it at once.
func TestConnectFallsBackToTheFake(t *testing.T) {
	ctx := context.Background()
	require.True(t, runtimeconn.FakeBuilt)
	missing := "unix://" + filepath.Join(t.TempDir(), "none.sock")
	for _, kind := range []runtimeconn.Kind{runtimeconn.KindAuto, runtimeconn.KindFake} {
		conn, err := runtimeconn.Connect(ctx, runtimeconn.Config{Kind: kind, Endpoint: missing, DialTimeout: 200 * time.Millisecond,
			FakeImages: []string{"nodekit.local/pause:1"}})
		require.NoError(t, err, kind)
		assert.True(t, conn.Fake)
		assert.NotEqual(t, missing, conn.Endpoint)
		assert.False(t, runtimeconn.OnHost(ctx, conn.Client), "the fake's containers are not this host's")
		images, err := conn.Client.ListImages(ctx, nil)
		require.NoError(t, err)
		assert.Len(t, images, 1)
		conn.Close()
	}
}
