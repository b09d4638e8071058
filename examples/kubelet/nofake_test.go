//go:build !fakeruntime

package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodekit-dev/nodekit/runtime/runtimeconn"
)

// The default build has no in-process fake: --runtime=fake, and auto with
// no runtime answering, fail with an error naming the build tag (and, for
// auto, the endpoint tried).
func TestTheDefaultBuildRefusesTheFake(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	missing := "unix://" + filepath.Join(t.TempDir(), "none.sock")

	cfg, err := parseFlags([]string{"--runtime", "fake", "--container-runtime-endpoint", missing})
	require.NoError(t, err)
	_, _, err = connect(ctx, cfg, log)
	assert.EqualError(t, err, "runtimeconn: --runtime=fake: this binary was built without the fake runtime (build with -tags fakeruntime)")

	cfg, err = parseFlags([]string{"--container-runtime-endpoint", missing})
	require.NoError(t, err)
	_, _, err = connect(ctx, cfg, log)
	var noFake *runtimeconn.NoFakeError
	require.True(t, errors.As(err, &noFake), "%v", err)
	assert.ErrorContains(t, err, "runtimeconn: --runtime=auto: no runtime answers at "+missing)
	assert.ErrorContains(t, err, "-tags fakeruntime")
}
