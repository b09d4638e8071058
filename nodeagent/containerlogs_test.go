//go:build integration

package nodeagent_test

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodekit-dev/nodekit/containerlog"
	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/testenv"
	"github.com/nodekit-dev/nodekit/nodeagent"
)

// TestContainerLogRotationOnContainerd: a container writing 50 MiB of logs
// at 1 MiB/s with containerLogMaxSize 1Mi and containerLogMaxFiles 3 never
// has more than 3 log files, the older ones gzipped; its logs still end
// with its newest lines; its /var/log/containers link (in a directory of
// the test's) points at the live file before and after the rotations.
func TestContainerLogRotationOnContainerd(t *testing.T) {
	cd := testenv.NeedContainerd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	a, cfg := startPodsAgent(t, ctx, cd, "logs", map[string]string{"chatty.yaml": `apiVersion: v1
kind: Pod
metadata: {name: chatty, namespace: default}
spec:
  containers:
  - {name: c, image: nodekit.local/testbin:1, imagePullPolicy: Never, args: [spew, "50", "1024"]}
`}, func(c *nodeagent.Config) {
		c.ContainerLogs = containerlog.Config{MaxSize: resource.MustParse("1Mi"), MaxFiles: 3, MonitorInterval: 3 * time.Second}
	})
	var pod v1.Pod
	poll.Eventually(t, func() bool {
		ps := a.Pods()
		if len(ps) == 1 && len(ps[0].Status.ContainerStatuses) == 1 && ps[0].Status.ContainerStatuses[0].State.Running != nil {
			pod = ps[0]
			return true
		}
		return false
	}, time.Minute, 20*time.Millisecond, "the pod running")
	live, err := a.LogPath(ctx, pod.Namespace, pod.Name, "c", false)
	require.NoError(t, err)
	link := containerlog.SymlinkPath(cfg.ContainersLogDir, containerlog.ContainerRef{PodName: pod.Name, PodNamespace: pod.Namespace,
		ContainerName: "c", ContainerID: strings.TrimPrefix(pod.Status.ContainerStatuses[0].ContainerID, "containerd://")})
	target, err := os.Readlink(link)
	require.NoError(t, err, "the container's link")
	assert.Equal(t, live, target)

	maxFiles, rotated, gzipped, newest := 0, false, false, ""
	poll.Eventually(t, func() bool {
		files, err := containerlog.AllLogs(live)
		require.NoError(t, err)
		maxFiles = max(maxFiles, len(files))
		for _, f := range files {
			rotated = rotated || f != live
			gzipped = gzipped || strings.HasSuffix(f, ".gz")
		}
		// One read: the next rotation may empty the live file at any time
		// (the kubelet's tail reads only the live file, as this one).
		newest = tailLogs(t, a, pod, 2)
		return strings.HasSuffix(newest, "spewed 50 MiB\n")
		// 50 s at 1 MiB/s alone; CI runs other packages' containers on the
		// same containerd meanwhile.
	}, 4*time.Minute, 200*time.Millisecond, "the container's last line in its logs: %s (pods: %s)", func() string { return tailLogs(t, a, pod, 3) },
		func() string { return podStates(a) })
	assert.True(t, rotated && gzipped, "rotated, and older files gzipped")
	assert.LessOrEqual(t, maxFiles, 3, "files of the container's log at any time")
	assert.Regexp(t, `^000524288 x+\nspewed 50 MiB\n$`, newest, "the newest lines")

	// The link still points at the live file, which exists.
	target, err = os.Readlink(link)
	require.NoError(t, err)
	assert.Equal(t, live, target)
	_, err = os.Stat(link)
	require.NoError(t, err)

	var total int64
	files, err := containerlog.AllLogs(live)
	require.NoError(t, err)
	for _, f := range files {
		st, err := os.Stat(f)
		require.NoError(t, err)
		total += st.Size()
	}
	t.Logf("after 50 MiB at 1 MiB/s: %d files (at most %d at any time), %.2f MiB on disk", len(files), maxFiles, float64(total)/(1<<20))
	assert.Less(t, total, int64(4<<20), "on disk: about MaxFiles x MaxSize (the live file, the newest rotation, gzipped ones)")
}

// tailLogs is the container's last n lines through the agent's
// /containerLogs, what kubectl logs --tail reads.
func tailLogs(t *testing.T, a *nodeagent.Agent, pod v1.Pod, n int) string {
	t.Helper()
	w := httptest.NewRecorder()
	a.APIHandler().ServeHTTP(w, httptest.NewRequest("GET", "/containerLogs/"+pod.Namespace+"/"+pod.Name+"/c?tailLines="+strconv.Itoa(n), nil))
	require.Equal(t, 200, w.Code, w.Body.String())
	b, _ := io.ReadAll(w.Body)
	return string(b)
}

// podStates says what the agent knows of its pods, for failure messages.
func podStates(a *nodeagent.Agent) string {
	var out []string
	for _, p := range a.Pods() {
		out = append(out, fmt.Sprintf("%s %s %s", p.Name, p.Status.Phase, p.Status.Reason))
	}
	return strings.Join(out, "; ")
}
