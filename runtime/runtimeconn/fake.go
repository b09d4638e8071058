//go:build fakeruntime

package runtimeconn

import (
	"context"

	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

// FakeBuilt says whether this binary can serve the in-process fake: true
// when built with -tags fakeruntime.
const FakeBuilt = true

func connectFake(ctx context.Context, cfg Config) (*Conn, error) {
	endpoint, stopFake, err := fake.StartTemp(fake.WithImages(cfg.FakeImages...), fake.WithHostPorts(cfg.FakeHostPorts))
	if err != nil {
		return nil, err
	}
	client, err := runtime.Dial(ctx, endpoint, cfg.Options...)
	if err != nil {
		stopFake()
		return nil, err
	}
	cfg.Log.Info("using fake runtime", "endpoint", endpoint)
	return &Conn{Client: client, Endpoint: endpoint, Fake: true,
		close: func() { client.Close(context.Background()); stopFake() }}, nil
}
