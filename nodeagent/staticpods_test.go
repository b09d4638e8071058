package nodeagent_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit-dev/nodekit/internal/poll"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/nodeagent"
)

// TestStaticPodVersionsRunOneAtATime: an edited manifest's new pod (a new
// UID, the same name) gets no sandbox while the old one is still being
// killed, however slow that is.
func TestStaticPodVersionsRunOneAtATime(t *testing.T) {
	dir := t.TempDir()
	manifest := func(version string) []byte {
		return []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - {name: c, image: nodekit.local/testbin:1, args: [sleep], env: [{name: V, value: \"" + version + "\"}]}\n")
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "web.yaml"), manifest("1"), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := startFakeAgent(t, ctx, dir)
	poll.Eventually(t, running(a.Agent, "web-n1"), 20*time.Second, 20*time.Millisecond, "web running")
	oldUID := podNamed(a.Agent, "web-n1").UID

	a.fake.SetLatency("StopPodSandbox", 1500*time.Millisecond) // a slow termination
	require.NoError(t, os.WriteFile(filepath.Join(dir, "web.yaml"), manifest("2"), 0o644))
	var sawOldAlone bool
	poll.Eventually(t, func() bool {
		pods, err := a.Runtime().GetPods(ctx, true)
		require.NoError(t, err)
		var old, other bool
		for _, p := range pods {
			switch {
			case p.ID == oldUID:
				old = true
			case p.Name == "web-n1":
				other = true
			}
		}
		require.False(t, old && other, "the new version has a sandbox while the old one is still there")
		sawOldAlone = sawOldAlone || (old && !other)
		return other && !old
	}, 20*time.Second, 20*time.Millisecond, "new version running, old one gone")
	assert.True(t, sawOldAlone, "the old version was seen being terminated")
	// Sandbox first, status after the sync that made it: wait, don't race.
	poll.Eventually(t, func() bool {
		p := podNamed(a.Agent, "web-n1")
		return p != nil && p.UID != oldUID && p.Status.Phase == "Running"
	}, 20*time.Second, 20*time.Millisecond, "the new version reported Running")
}

// TestOrphanedPodsAreKilled: a runtime pod of this node that no source has
// is killed and removed by housekeeping; another node's pod is left alone.
func TestOrphanedPodsAreKilled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := startFakeAgent(t, ctx, t.TempDir())
	sandbox := func(uid, node string) string {
		resp, err := a.cri.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{
			Metadata: &runtimeapi.PodSandboxMetadata{Name: "left-" + uid, Namespace: "default", Uid: uid},
			Labels:   map[string]string{nodeagent.NodeLabel: node, kc.LabelPodUID: uid, kc.LabelPodName: "left-" + uid, kc.LabelPodNamespace: "default"},
		}, "")
		require.NoError(t, err)
		return resp
	}
	mine, theirs := sandbox("orphan", "n1"), sandbox("foreign", "other-node")
	exists := func(id string) bool {
		sbs, err := a.cri.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{Id: id})
		require.NoError(t, err)
		return len(sbs) == 1
	}
	poll.Eventually(t, func() bool { return !exists(mine) }, 20*time.Second, 20*time.Millisecond, "orphan killed and removed")
	// A clean-up round that saw the foreign pod again: an orphan made after
	// the first one went is killed by a later round.
	later := sandbox("later", "n1")
	poll.Eventually(t, func() bool { return !exists(later) }, 20*time.Second, 20*time.Millisecond, "the later orphan killed and removed")
	assert.True(t, exists(theirs), "another node's pod is not this agent's to kill")
}
