//go:build integration

package kuberuntime_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/testenv"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/podstatus"
)

// TestContainerRestartRulesOnContainerd: under restartPolicy Never, a
// container whose rule restarts exit code 42 is restarted each time it
// exits 42, one exiting 3 with the same rule is not, and the pod stays
// Running (the kubelet's getPhase with restart rules) until then.
func TestContainerRestartRulesOnContainerd(t *testing.T) {
	m, client := newContainerdManager(t, kuberuntime.NewBackoff(nil, 200*time.Millisecond, time.Second))
	ctx := context.Background()
	uid := types.UID("rules-" + rand.String(8))
	rules := []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	never := ptr.To(v1.ContainerRestartPolicyNever)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "rules", Namespace: "default", UID: uid},
		Spec: v1.PodSpec{HostNetwork: true, RestartPolicy: v1.RestartPolicyNever, TerminationGracePeriodSeconds: new(int64),
			Containers: []v1.Container{
				{Name: "retry", Image: testenv.TestImage, Args: []string{"exit", "42"}, ImagePullPolicy: v1.PullNever,
					RestartPolicy: never, RestartPolicyRules: rules},
				{Name: "fail", Image: testenv.TestImage, Args: []string{"exit", "3"}, ImagePullPolicy: v1.PullNever,
					RestartPolicy: never, RestartPolicyRules: rules},
			}}}
	cleanupPod(t, m, client, uid)
	var st *kc.PodStatus
	poll.Eventually(t, func() bool {
		var err error
		st, err = m.GetPodStatus(ctx, uid, pod.Name, pod.Namespace)
		require.NoError(t, err)
		m.SyncPod(ctx, pod, st, kuberuntime.SyncOptions{CgroupParent: testenv.CgroupParent(string(uid))})
		retry := st.FindContainerStatusByName("retry")
		return retry != nil && retry.RestartCount >= 2 && retry.State == kc.ContainerStateExited
	}, 60*time.Second, 100*time.Millisecond, "exit 42 restarted twice")
	fail := st.FindContainerStatusByName("fail")
	require.NotNil(t, fail)
	assert.Equal(t, kc.ContainerStateExited, fail.State)
	assert.Equal(t, 3, fail.ExitCode)
	assert.Equal(t, 0, fail.RestartCount, "exit 3 matches no rule: the container's Never")
	status := podstatus.Generate(podstatus.Input{Pod: pod, Runtime: st, RuntimeName: "containerd"})
	assert.Equal(t, v1.PodRunning, status.Phase, "a container restarts: Running, not Failed")
}
