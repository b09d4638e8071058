//go:build integration

package runtime_test

import (
	"testing"

	"github.com/nodekit-dev/nodekit/internal/testenv"
	"github.com/nodekit-dev/nodekit/runtime/runtimetest"
)

// TestContractContainerd runs the CRI contract suite against the real
// containerd started by hack/containerd-up.sh.
func TestContractContainerd(t *testing.T) {
	cd := testenv.NeedContainerd(t)
	client := cd.Dial(t)
	runtimetest.Run(t, func(t *testing.T) runtimetest.Target {
		return runtimetest.Target{
			Client:         client,
			TestImage:      testenv.TestImage,
			RemovableImage: testenv.RemovableImage,
			LoadImage:      func(t *testing.T, ref string) { cd.ImportImage(t, ref) },
			CgroupParent:   testenv.CgroupParent,
			CleanupCgroup:  func(t *testing.T, uid string) { testenv.RemovePodCgroup(t, uid) },
		}
	})
}
