package runtimeconn_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
	"github.com/nodekit-dev/nodekit/runtime/runtimeconn"
)

// In auto mode, with no runtime answering at the endpoint, Connect serves
// runtime/fake in-process; OnHost says its containers are not this host's.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "runtimeconn-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	conn, err := runtimeconn.Connect(ctx, runtimeconn.Config{Kind: runtimeconn.KindAuto,
		Endpoint: "unix://" + filepath.Join(dir, "containerd.sock"), DialTimeout: 200 * time.Millisecond,
		FakeOptions: []fake.Option{fake.WithHostPorts(false)}})
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	v, err := conn.Client.Version(ctx, runtime.CRIVersion)
	if err != nil {
		panic(err)
	}
	fmt.Println("fake:", conn.Fake)
	fmt.Println("runtime:", v.RuntimeName)
	fmt.Println("on this host:", runtimeconn.OnHost(ctx, conn.Client))
	// Output:
	// fake: true
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
