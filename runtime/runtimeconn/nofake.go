//go:build !fakeruntime

package runtimeconn

import "context"

// FakeBuilt says whether this binary can serve the in-process fake: false
// without -tags fakeruntime, where Connect returns a *NoFakeError instead.
const FakeBuilt = false

func connectFake(_ context.Context, cfg Config) (*Conn, error) {
	return nil, &NoFakeError{Kind: cfg.Kind, Endpoint: cfg.Endpoint}
}
