package runtimeconn_test

import (
	"context"
	"fmt"
	"time"

	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
	"github.com/nodekit-dev/nodekit/runtime/runtimeconn"
)

// Connect dials the runtime at the endpoint: here runtime/fake, served by
// the example over a socket as a test would (built with -tags fakeruntime,
// Connect can also serve one in-process, for KindFake or when KindAuto
// finds no runtime). OnHost says its containers are not this host's.
func Example() {
	ctx := context.Background()
	endpoint, stop, err := fake.StartTemp()
	if err != nil {
		panic(err)
	}
	defer stop()
	conn, err := runtimeconn.Connect(ctx, runtimeconn.Config{Kind: runtimeconn.KindAuto,
		Endpoint: endpoint, DialTimeout: 2 * time.Second})
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	v, err := conn.Client.Version(ctx, runtime.CRIVersion)
	if err != nil {
		panic(err)
	}
	fmt.Println("in-process fake:", conn.Fake)
	fmt.Println("runtime:", v.RuntimeName)
	fmt.Println("on this host:", runtimeconn.OnHost(ctx, conn.Client))
	// Output:
	// in-process fake: false
	// runtime: nodekit-fake
	// on this host: false
}

// ParseKind checks a --runtime value.
func ExampleParseKind() {
	for _, s := range []string{"auto", "remote", "fake", "docker"} {
		k, err := runtimeconn.ParseKind(s)
		fmt.Printf("%q %v\n", k, err)
	}
	// Output:
	// "auto" <nil>
	// "remote" <nil>
	// "fake" <nil>
	// "" invalid value "docker": want auto, remote or fake
}
