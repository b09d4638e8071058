//go:build integration

package nodeagent_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/testenv"
	"github.com/nodekit-dev/nodekit/nodestatus"
	"github.com/nodekit-dev/nodekit/oomwatch"
)

// TestSystemOOMEventOnNode: in cluster mode a system-wide OOM in the
// kernel log becomes the kubelet's SystemOOM Warning event on the Node.
// The test cannot exhaust the machine's memory: it logs, through
// /dev/kmsg, the three lines Linux 6.x prints for a global OOM kill
// (constraint CONSTRAINT_NONE, global_oom), for a made-up process.
func TestSystemOOMEventOnNode(t *testing.T) {
	cd := testenv.NeedContainerd(t)
	api := testenv.NeedAPIServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cleanup := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = api.Admin.CoreV1().Nodes().Delete(ctx, api.Node, metav1.DeleteOptions{})
		_ = api.Admin.CoordinationV1().Leases(nodestatus.LeaseNamespace).Delete(ctx, api.Node, metav1.DeleteOptions{})
	}
	cleanup()
	t.Cleanup(cleanup)
	cfg := containerdConfig(t, cd, api.Node)
	cfg.Client, cfg.ManifestPath, cfg.CgroupsPerQOS, cfg.NodeStatusUpdateFrequency = apiClient(t, api.NodeConfig), t.TempDir(), ptr.To(false), time.Second
	startContainerdAgent(t, ctx, cfg)
	poll.Eventually(t, func() bool {
		_, err := api.Admin.CoreV1().Nodes().Get(ctx, api.Node, metav1.GetOptions{})
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "node registered")

	kmsg, err := os.OpenFile(oomwatch.DefaultKmsgPath, os.O_WRONLY, 0)
	require.NoError(t, err, "writing the kernel log needs root")
	defer kmsg.Close()
	const pid = 4194301 // above any pid this machine hands out
	victim := fmt.Sprintf("nodekit-sysoom-%d", time.Now().UnixNano()%100000)
	for _, line := range []string{
		"<4>" + victim + " invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0",
		fmt.Sprintf("<6>oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/nodekit-test/sysoom,task=%s,pid=%d,uid=0", victim, pid),
		fmt.Sprintf("<3>Out of memory: Killed process %d (%s) total-vm:1048576kB, anon-rss:524288kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:1100kB oom_score_adj:0", pid, victim),
	} {
		_, err := fmt.Fprintln(kmsg, line)
		require.NoError(t, err)
	}

	want := fmt.Sprintf("System OOM encountered, victim process: %s, pid: %d", victim, pid)
	poll.Eventually(t, func() bool {
		events, err := api.Admin.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "reason=SystemOOM"})
		require.NoError(t, err)
		for _, e := range events.Items {
			if e.InvolvedObject.Kind == "Node" && e.InvolvedObject.Name == api.Node && e.Type == v1.EventTypeWarning && e.Message == want {
				return true
			}
		}
		return false
	}, 30*time.Second, 200*time.Millisecond, "the SystemOOM event %q on node %s", want, api.Node)
}
