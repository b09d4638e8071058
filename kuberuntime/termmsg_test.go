package kuberuntime_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/internal/poll"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

// kubelet makeMounts + getTerminationMessage + readLastStringFromContainerLogs
// (kuberuntime_container.go): an exited container's termination-message
// file, or under FallbackToLogsOnError the end of its log, is its message.
func TestTerminationMessage(t *testing.T) {
	long := strings.Repeat("x", 5000) + "END"
	for _, tc := range []struct {
		name   string
		args   []string
		policy v1.TerminationMessagePolicy
		path   string
		want   string
		exit   int
	}{{
		name: "kubelet getTerminationMessage: the file written at terminationMessagePath is the message",
		args: []string{"write", "/dev/termination-log", "it broke", "3"}, policy: v1.TerminationMessageReadFile,
		path: "/dev/termination-log", want: "it broke", exit: 3,
	}, {
		name: "kubelet getTerminationMessage: a custom path",
		args: []string{"write", "/tmp/why", "done fine"}, policy: v1.TerminationMessageReadFile,
		path: "/tmp/why", want: "done fine",
	}, {
		name: "kubelet getTerminationMessage: only the last MaxContainerTerminationMessageLength (4096) bytes",
		args: []string{"write", "/dev/termination-log", long, "1"}, policy: v1.TerminationMessageReadFile,
		path: "/dev/termination-log", want: long[len(long)-4096:], exit: 1,
	}, {
		name: "kubelet toKubeContainerStatus: FallbackToLogsOnError, empty file, exit 3: the log's end",
		args: []string{"exit", "3"}, policy: v1.TerminationMessageFallbackToLogsOnError,
		path: "/dev/termination-log", want: "exiting with 3\n", exit: 3,
	}, {
		name: "kubelet toKubeContainerStatus: FallbackToLogsOnError, the file wins over the log",
		args: []string{"write", "/dev/termination-log", "from file", "3"}, policy: v1.TerminationMessageFallbackToLogsOnError,
		path: "/dev/termination-log", want: "from file", exit: 3,
	}, {
		name: "kubelet toKubeContainerStatus: FallbackToLogsOnError, exit 0: no log",
		args: []string{"exit", "0"}, policy: v1.TerminationMessageFallbackToLogsOnError,
		path: "/dev/termination-log", want: "",
	}, {
		name: "kubelet toKubeContainerStatus: File policy never reads the log",
		args: []string{"exit", "3"}, policy: v1.TerminationMessageReadFile,
		path: "/dev/termination-log", want: "", exit: 3,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(1700000000, 0))
			_, client := startFake(t, fake.WithClock(clk))
			root := t.TempDir()
			m, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: client, Clock: clk,
				PodLogsDir: t.TempDir(), RootDir: root, DNS: kuberuntime.HostDNS("", nil, "")})
			require.NoError(t, err)
			ctx := context.Background()
			pod := podSpec("tm", v1.RestartPolicyNever, v1.Container{Name: "c", Image: testImage, Args: tc.args,
				TerminationMessagePath: tc.path, TerminationMessagePolicy: tc.policy})
			st, err := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
			require.NoError(t, err)
			require.NoError(t, m.SyncPod(ctx, pod, st, kuberuntime.SyncOptions{}).Err())
			poll.Eventually(t, func() bool {
				st, err = m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
				require.NoError(t, err)
				cs := st.FindContainerStatusByName("c")
				return cs != nil && cs.State == kc.ContainerStateExited
			}, 10*time.Second, time.Millisecond)
			cs := st.FindContainerStatusByName("c")
			assert.Equal(t, tc.exit, cs.ExitCode)
			assert.Equal(t, tc.want, cs.Message)

			files, err := filepath.Glob(filepath.Join(root, "pods", string(pod.UID), "containers", "c", "*"))
			require.NoError(t, err)
			require.Len(t, files, 1, "kubelet makeMounts: one file per container instance under <root>/pods/<uid>/containers/<name>")
			assert.Regexp(t, "^[0-9a-f]{8}$", filepath.Base(files[0]))
			info, err := os.Stat(files[0])
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o666), info.Mode().Perm())
		})
	}
}
