package runtimeconn_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/nodekit-dev/nodekit/runtime/fake"
	"github.com/nodekit-dev/nodekit/runtime/runtimeconn"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseKind(t *testing.T) {
	for _, s := range []string{"auto", "remote", "fake"} {
		k, err := runtimeconn.ParseKind(s)
		require.NoError(t, err)
		assert.Equal(t, runtimeconn.Kind(s), k)
	}
	_, err := runtimeconn.ParseKind("docker")
	var kindErr *runtimeconn.KindError
	require.True(t, errors.As(err, &kindErr))
	assert.Equal(t, "docker", kindErr.Value)
	assert.EqualError(t, err, `invalid value "docker": want auto, remote or fake`)

	_, err = runtimeconn.Connect(context.Background(), runtimeconn.Config{Kind: "docker"})
	assert.ErrorContains(t, err, `runtimeconn: Config.Kind: invalid value "docker"`)
	_, err = runtimeconn.Connect(context.Background(), runtimeconn.Config{DialTimeout: -time.Second})
	assert.ErrorContains(t, err, "runtimeconn: Config.DialTimeout: invalid value -1s")
}

// Auto falls back to the in-process fake when the remote runtime does not
// answer; remote fails instead; OnHost tells the fake from a host runtime.
func TestConnectFallsBackToTheFake(t *testing.T) {
	ctx := context.Background()
	missing := "unix://" + filepath.Join(t.TempDir(), "none.sock")
	_, err := runtimeconn.Connect(ctx, runtimeconn.Config{Kind: runtimeconn.KindRemote, Endpoint: missing,
		DialTimeout: 200 * time.Millisecond})
	require.Error(t, err)

	conn, err := runtimeconn.Connect(ctx, runtimeconn.Config{Endpoint: missing, DialTimeout: 200 * time.Millisecond,
		FakeOptions: []fake.Option{fake.WithHostPorts(false)}})
	require.NoError(t, err)
	defer conn.Close()
	assert.True(t, conn.Fake)
	assert.NotEqual(t, missing, conn.Endpoint)
	assert.False(t, runtimeconn.OnHost(ctx, conn.Client), "the fake's containers are not this host's")

	// A fake served over a socket is dialled as a remote runtime.
	remote, err := runtimeconn.Connect(ctx, runtimeconn.Config{Kind: runtimeconn.KindRemote, Endpoint: conn.Endpoint})
	require.NoError(t, err)
	defer remote.Close()
	assert.False(t, remote.Fake)
	assert.False(t, runtimeconn.OnHost(ctx, remote.Client))
}
