package testenv

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

// StartFake serves a fresh fake runtime holding TestImage and PauseImage
// (plus opts) on a unix socket in t's temporary directory and dials it;
// both are closed when t ends.
func StartFake(t testing.TB, opts ...fake.Option) (*fake.Runtime, *runtime.Client) {
	t.Helper()
	f := fake.New(append([]fake.Option{fake.WithImages(TestImage, PauseImage)}, opts...)...)
	endpoint := "unix://" + filepath.Join(t.TempDir(), "cri.sock")
	stop, err := f.Start(endpoint)
	require.NoError(t, err)
	client, err := runtime.Dial(context.Background(), endpoint)
	require.NoError(t, err)
	t.Cleanup(func() {
		client.Close(context.Background())
		stop()
		f.Close()
	})
	return f, client
}
