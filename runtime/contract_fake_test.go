package runtime_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nodekit-dev/nodekit/internal/testenv"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
	"github.com/nodekit-dev/nodekit/runtime/runtimetest"
)

const (
	testImage      = "nodekit.local/testbin:1"
	pauseImage     = "nodekit.local/pause:1"
	removableImage = "nodekit.local/removable:1"
)

// startFake serves a fresh fake runtime with the test images and dials it.
func startFake(t testing.TB, opts ...fake.Option) (*fake.Runtime, *runtime.Client) {
	return testenv.StartFake(t, opts...)
}

// TestContractFake runs the CRI contract suite against the fake runtime over
// real gRPC; TestContractContainerd (tag integration) runs the same suite
// against containerd.
func TestContractFake(t *testing.T) {
	runtimetest.Run(t, func(t *testing.T) runtimetest.Target {
		f, client := startFake(t)
		return runtimetest.Target{
			Client:         client,
			TestImage:      testImage,
			RemovableImage: removableImage,
			LoadImage:      func(t *testing.T, ref string) { require.NoError(t, f.LoadImages(ref)) },
		}
	})
}

// TestContractInProcess runs the same suite against the fake called in
// process (NewInProcessClient): the same answers, errors and events as over
// gRPC.
func TestContractInProcess(t *testing.T) {
	t.Run("copied", func(t *testing.T) { runInProcessContract(t) })
	t.Run("shared lists", func(t *testing.T) { runInProcessContract(t, runtime.WithSharedListResponses()) })
}

func runInProcessContract(t *testing.T, opts ...runtime.Option) {
	runtimetest.Run(t, func(t *testing.T) runtimetest.Target {
		f := fake.New(fake.WithImages(testImage, pauseImage))
		t.Cleanup(func() { f.Close() })
		return runtimetest.Target{
			Client:         runtime.NewInProcessClient(f, opts...),
			TestImage:      testImage,
			RemovableImage: removableImage,
			LoadImage:      func(t *testing.T, ref string) { require.NoError(t, f.LoadImages(ref)) },
		}
	})
}
