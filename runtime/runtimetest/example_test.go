package runtimetest_test

import (
	"context"
	"testing"

	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
	"github.com/nodekit-dev/nodekit/runtime/runtimetest"
)

// A runtime's own test runs the contract against it; here the runtime is
// nodekit's fake. This function is compiled by go test but, having no
// Output, not run: Run needs the *testing.T of a real test
// (runtime.TestContractFake and TestContractContainerd run it for real).
func Example() {
	testMyRuntime := func(t *testing.T) {
		runtimetest.Run(t, func(t *testing.T) runtimetest.Target {
			ctx := context.Background()
			endpoint, stop, err := fake.StartTemp(fake.WithImages("nodekit.local/pause:1", "nodekit.local/testbin:1"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(stop)
			c, err := runtime.Dial(ctx, endpoint)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close(ctx) })
			return runtimetest.Target{Client: c, TestImage: "nodekit.local/testbin:1"}
		})
	}
	_ = testMyRuntime // func TestMyRuntime(t *testing.T) { testMyRuntime(t) }
}
