// Package runtimetest is a contract suite for CRI runtimes: what a runtime
// must do for the kubelet's building blocks to work — sandboxes, containers,
// exit codes, ExecSync, list filters, NotFound cases, images and logs.
//
// nodekit runs it against both the in-memory fake (runtime/fake) and a real
// containerd, which is what makes the fake trustworthy: where they differ,
// the fake is wrong. Users can run it against their own runtime:
//
//	func TestMyRuntime(t *testing.T) {
//		runtimetest.Run(t, func(t *testing.T) runtimetest.Target {
//			ctx := context.Background()
//			c, err := runtime.Dial(ctx, "unix:///run/my.sock")
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { c.Close(ctx) })
//			return runtimetest.Target{Client: c, TestImage: "registry.local/testbin:1"}
//		})
//	}
//
// The package's Example is this, against the fake; it is compiled by go
// test but not run there, since Run needs the *testing.T of a test.
//
// The test image must behave like nodekit's testbin (hack/tools/testbin):
// its first argument picks a mode (serve, sleep, exit N, echo ...).
package runtimetest
