//go:build integration

package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodekit-dev/nodekit/internal/testenv"
	"github.com/nodekit-dev/nodekit/runtime"
)

// TestReconnectAfterContainerdRestart kills a private containerd (so other
// tests keep theirs), checks calls fail fast while it is down, starts it again
// and checks the same client's next call succeeds without being re-dialled.
func TestReconnectAfterContainerdRestart(t *testing.T) {
	cd := testenv.PrivateContainerd(t, "reconnect")
	client := cd.Dial(t)
	ctx := context.Background()

	_, err := client.Version(ctx, runtime.CRIVersion)
	require.NoError(t, err)

	cd.Kill(t)
	start := time.Now()
	_, err = client.ListPodSandbox(ctx, nil)
	require.Error(t, err, "runtime is down")
	assert.ErrorIs(t, err, runtime.ErrUnavailable)
	assert.Less(t, time.Since(start), 10*time.Second, "a down runtime fails fast instead of hanging")

	cd.Start(t)
	_, err = client.ListPodSandbox(ctx, nil)
	require.NoError(t, err, "the client reconnects by itself")
	v, err := client.Version(ctx, runtime.CRIVersion)
	require.NoError(t, err)
	assert.Equal(t, "v1", v.RuntimeApiVersion)
}
