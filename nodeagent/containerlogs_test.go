//go:build integration

package nodeagent_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
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

	// While it spews, the API's tail keeps showing the newest lines
	// across rotations (a sequence number higher than any read before the
	// last rotation seen).
	maxFiles, rotated, gzipped := 0, false, false
	lastSeq, seqAtRotation, readAfterRotation := 0, -1, false
	onDisk := ""
	poll.Eventually(t, func() bool {
		files, err := containerlog.AllLogs(live)
		require.NoError(t, err)
		maxFiles = max(maxFiles, len(files))
		if len(files) > 1 && !rotated {
			rotated, seqAtRotation = true, lastSeq
		}
		for _, f := range files {
			gzipped = gzipped || strings.HasSuffix(f, ".gz")
		}
		if seq, ok := spewSeq(tailLogs(t, a, pod, 1)); ok {
			lastSeq = max(lastSeq, seq)
			readAfterRotation = readAfterRotation || (rotated && seq > seqAtRotation)
		}
		onDisk = lastLogLines(t, files, 2)
		return strings.HasSuffix(onDisk, " spewed 50 MiB\n")
		// 50 s at 1 MiB/s alone; CI runs other packages' containers on the
		// same containerd meanwhile.
	}, 4*time.Minute, 200*time.Millisecond, "the container's last line on disk: %s (pods: %s)", func() string { return onDisk },
		func() string { return podStates(a) })
	assert.True(t, rotated && gzipped, "rotated, and older files gzipped")
	assert.True(t, readAfterRotation, "the API's tail read newer lines after a rotation (last seen %d)", lastSeq)
	assert.LessOrEqual(t, maxFiles, 3, "files of the container's log at any time")
	assert.Regexp(t, `stdout F 000524288 x+\n.* stdout F spewed 50 MiB\n$`, onDisk, "the newest lines")

	// Nothing is written any more: once the live file is under MaxSize no
	// rotation comes, and the tail is the live file's (empty if the last
	// rotation took everything, as the kubelet's tail reads only it).
	poll.Eventually(t, func() bool {
		st, err := os.Stat(live)
		return err == nil && st.Size() <= 1<<20
	}, time.Minute, 200*time.Millisecond, "the live file under MaxSize")
	want := ""
	if b, err := os.ReadFile(live); assert.NoError(t, err) && len(b) > 0 {
		want = "000524288 " + strings.Repeat("x", 89) + "\nspewed 50 MiB\n"
		if !strings.Contains(string(b), " stdout F 000524288 ") {
			want = "spewed 50 MiB\n" // the rotation came between the two lines
		}
	}
	assert.Equal(t, want, tailLogs(t, a, pod, 2), "the API's tail after the last rotation")

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

// spewSeq is the sequence number of a spew line ("000000042 xxx…").
func spewSeq(line string) (int, bool) {
	num, _, ok := strings.Cut(line, " ")
	if !ok || len(num) != 9 {
		return 0, false
	}
	n, err := strconv.Atoi(num)
	return n, err == nil
}

// lastLogLines is the last n lines of a log on disk (CRI format), from its
// newest files: the live one, and the newest rotated file if the live one
// has fewer lines (the kubelet keeps that one uncompressed).
func lastLogLines(t *testing.T, files []string, n int) string {
	t.Helper()
	var lines []string
	for i := len(files) - 1; i >= 0 && len(lines) < n && !strings.HasSuffix(files[i], ".gz"); i-- {
		b, err := os.ReadFile(files[i])
		if errors.Is(err, fs.ErrNotExist) {
			return "" // rotated meanwhile: the next poll reads again
		}
		require.NoError(t, err)
		got := strings.SplitAfter(string(b), "\n")
		if got[len(got)-1] == "" {
			got = got[:len(got)-1]
		}
		lines = append(got, lines...)
	}
	return strings.Join(lines[max(0, len(lines)-n):], "")
}

// podStates says what the agent knows of its pods, for failure messages.
func podStates(a *nodeagent.Agent) string {
	var out []string
	for _, p := range a.Pods() {
		out = append(out, fmt.Sprintf("%s %s %s", p.Name, p.Status.Phase, p.Status.Reason))
	}
	return strings.Join(out, "; ")
}
