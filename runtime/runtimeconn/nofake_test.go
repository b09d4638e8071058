//go:build !fakeruntime

package runtimeconn_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodekit-dev/nodekit/runtime/runtimeconn"
)

// Without -tags fakeruntime, fake, and auto with no runtime answering, fail
// with a *NoFakeError naming the tag (and, for auto, the endpoint tried).
func TestTheDefaultBuildHasNoFake(t *testing.T) {
	ctx := context.Background()
	require.False(t, runtimeconn.FakeBuilt)
	missing := "unix://" + filepath.Join(t.TempDir(), "none.sock")

	_, err := runtimeconn.Connect(ctx, runtimeconn.Config{Kind: runtimeconn.KindFake, Endpoint: missing})
	var noFake *runtimeconn.NoFakeError
	require.True(t, errors.As(err, &noFake), "%v", err)
	assert.Equal(t, runtimeconn.KindFake, noFake.Kind)
	assert.EqualError(t, err, "runtimeconn: --runtime=fake: this binary was built without the fake runtime (build with -tags fakeruntime)")

	_, err = runtimeconn.Connect(ctx, runtimeconn.Config{Endpoint: missing, DialTimeout: 200 * time.Millisecond})
	require.True(t, errors.As(err, &noFake), "%v", err)
	assert.Equal(t, runtimeconn.KindAuto, noFake.Kind)
	assert.Equal(t, missing, noFake.Endpoint)
	require.Error(t, noFake.Err, "why the remote runtime did not answer")
	assert.ErrorContains(t, err, "runtimeconn: --runtime=auto: no runtime answers at "+missing+" (")
	assert.ErrorContains(t, err, "and this binary was built without the fake runtime (build with -tags fakeruntime)")
}
