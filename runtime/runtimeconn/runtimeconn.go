// Package runtimeconn connects a node agent to its container runtime the
// way examples/kubelet's --runtime chooses it: a remote CRI runtime
// (containerd) at an endpoint, runtime/fake served in-process, or, in auto
// mode, the remote one when it answers and the fake otherwise. It links
// runtime/fake only when built with -tags fakeruntime; without the tag,
// KindFake, and KindAuto when the remote runtime does not answer, fail
// with a *NoFakeError, so that a production agent does not carry the fake.
// Package nodeagent never links it, and takes the connection's client
// (Config.Runtime) and whether its containers are this host's
// (Config.RuntimeOnHost, see OnHost).
package runtimeconn

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	"github.com/nodekit-dev/nodekit/runtime"
)

// Kind is how Connect finds the runtime.
type Kind string

// The kinds: auto (the remote runtime if it answers, else the fake),
// remote only, fake only. The fake needs -tags fakeruntime (FakeBuilt).
const (
	KindAuto   Kind = "auto"
	KindRemote Kind = "remote"
	KindFake   Kind = "fake"
)

// DefaultDialTimeout bounds the dial of the remote runtime.
const DefaultDialTimeout = 3 * time.Second

// KindError is a Kind that is none of the kinds.
type KindError struct{ Value string }

func (e *KindError) Error() string {
	return fmt.Sprintf("invalid value %q: want auto, remote or fake", e.Value)
}

// ParseKind returns the Kind named s, or a *KindError.
func ParseKind(s string) (Kind, error) {
	switch k := Kind(s); k {
	case KindAuto, KindRemote, KindFake:
		return k, nil
	}
	return "", &KindError{Value: s}
}

// Config is where the runtime is and how to reach it.
type Config struct {
	// Kind is auto, remote or fake ("": auto).
	Kind Kind
	// Endpoint is the remote runtime's CRI endpoint
	// ("": runtime.DefaultRuntimeEndpoint).
	Endpoint string
	// ImageEndpoint is the CRI image service's, if not Endpoint.
	ImageEndpoint string
	// DialTimeout bounds the remote runtime's dial (0: DefaultDialTimeout).
	DialTimeout time.Duration
	// Options are the CRI client's (metrics, image endpoint, ...).
	Options []runtime.Option
	// FakeImages are the images the in-process fake holds from the start.
	FakeImages []string
	// FakeHostPorts makes the in-process fake really serve its test
	// image's HTTP on host-network ports (fake.WithHostPorts).
	FakeHostPorts bool
	Log           logr.Logger
}

func (c Config) withDefaults() (Config, error) {
	if c.Kind == "" {
		c.Kind = KindAuto
	}
	if _, err := ParseKind(string(c.Kind)); err != nil {
		return c, fmt.Errorf("runtimeconn: Config.Kind: %w", err)
	}
	if c.Endpoint == "" {
		c.Endpoint = runtime.DefaultRuntimeEndpoint
	}
	if c.DialTimeout < 0 {
		return c, fmt.Errorf("runtimeconn: Config.DialTimeout: invalid value %s: must not be negative", c.DialTimeout)
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.Log.GetSink() == nil {
		c.Log = logr.Discard()
	}
	if c.ImageEndpoint != "" {
		c.Options = append(c.Options[:len(c.Options):len(c.Options)], runtime.WithImageEndpoint(c.ImageEndpoint))
	}
	return c, nil
}

// Conn is a connected runtime client; Close ends it (and the fake).
type Conn struct {
	Client *runtime.Client
	// Endpoint is the one dialled: the remote runtime's or the fake's.
	Endpoint string
	// Fake says the client is on the in-process fake.
	Fake  bool
	close func()
}

// Close closes the client and stops the in-process fake, if any.
func (c *Conn) Close() { c.close() }

// Connect dials the remote runtime, or serves a fake one in-process, as
// cfg.Kind says.
func Connect(ctx context.Context, cfg Config) (*Conn, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.Kind != KindFake {
		dctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
		client, err := runtime.Dial(dctx, cfg.Endpoint, cfg.Options...)
		cancel()
		if err == nil {
			cfg.Log.Info("using remote runtime", "endpoint", cfg.Endpoint)
			return &Conn{Client: client, Endpoint: cfg.Endpoint, close: func() { client.Close(context.Background()) }}, nil
		}
		if cfg.Kind == KindRemote {
			return nil, err
		}
		if !FakeBuilt {
			return nil, &NoFakeError{Kind: cfg.Kind, Endpoint: cfg.Endpoint, Err: err}
		}
		cfg.Log.Info("remote runtime not available, using the in-process fake runtime", "endpoint", cfg.Endpoint, "reason", err.Error())
	} else if !FakeBuilt {
		return nil, &NoFakeError{Kind: cfg.Kind}
	}
	return connectFake(ctx, cfg)
}

// NoFakeError is Connect's error when it would serve the in-process fake
// but the binary was built without it (no -tags fakeruntime): for KindFake,
// or for KindAuto when no runtime answers at Endpoint (Err says why).
type NoFakeError struct {
	Kind     Kind
	Endpoint string
	Err      error
}

func (e *NoFakeError) Error() string {
	const noFake = "this binary was built without the fake runtime (build with -tags fakeruntime)"
	if e.Kind == KindFake {
		return "runtimeconn: --runtime=fake: " + noFake
	}
	return fmt.Sprintf("runtimeconn: --runtime=%s: no runtime answers at %s (%v), and %s", e.Kind, e.Endpoint, e.Err, noFake)
}

func (e *NoFakeError) Unwrap() error { return e.Err }

// fakeRuntimeName is runtime/fake's RuntimeName, named here so that OnHost
// needs no fake (runtimeconn's tests check they agree).
const fakeRuntimeName = "nodekit-fake"

// OnHost says whether client's runtime runs its containers on this host,
// for nodeagent.Config.RuntimeOnHost: not when it is runtime/fake (served
// in-process, or by a test over a socket), whose containers, cgroups and
// image filesystem are not this host's. A runtime that does not answer
// Version is taken to be on the host, as the kubelet's.
func OnHost(ctx context.Context, client *runtime.Client) bool {
	v, err := client.Version(ctx, runtime.CRIVersion)
	return err != nil || v.RuntimeName != fakeRuntimeName
}
