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

// Remote fails when no runtime answers; a fake served over a socket is
// dialled as a remote runtime, and OnHost tells it from a host runtime by
// its name.
func TestConnectRemoteAndOnHost(t *testing.T) {
	ctx := context.Background()
	missing := "unix://" + filepath.Join(t.TempDir(), "none.sock")
	_, err := runtimeconn.Connect(ctx, runtimeconn.Config{Kind: runtimeconn.KindRemote, Endpoint: missing,
		DialTimeout: 200 * time.Millisecond})
	require.Error(t, err)
	var noFake *runtimeconn.NoFakeError
	assert.False(t, errors.As(err, &noFake), "remote never wants the fake")

	for name, onHost := range map[string]bool{fake.RuntimeName: false, "containerd": true} {
		endpoint, stop, err := fake.StartTemp(fake.WithRuntimeName(name))
		require.NoError(t, err)
		remote, err := runtimeconn.Connect(ctx, runtimeconn.Config{Kind: runtimeconn.KindRemote, Endpoint: endpoint})
		require.NoError(t, err)
		assert.False(t, remote.Fake)
		assert.Equal(t, endpoint, remote.Endpoint)
		assert.Equal(t, onHost, runtimeconn.OnHost(ctx, remote.Client), "runtime %q", name)
		remote.Close()
		stop()
	}
}
