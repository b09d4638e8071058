package nodeagent_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakeclient "k8s.io/client-go/kubernetes/fake"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/kubeapi/clientgo"
	"github.com/nodekit-dev/nodekit/nodeagent"
	"github.com/nodekit-dev/nodekit/nodestatus"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

// The kubelet's syncLoop synchronizes no pod until the PLEG has relisted.
// An agent killed between a pod's final status and its termination finds
// the pod Failed in the API and its sandbox still ready; when the API
// source delivers before the runtime answers a list, the pod must still be
// terminated, not taken for done with its sandbox left running (the soak's
// failure).
func TestRestartSyncsNoPodBeforeTheFirstRelist(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f, cri := serveFakeRuntime(t, ctx)
	api := fakeclient.NewClientset()
	cfg := nodeagent.Config{NodeName: "n1", NodeIP: "127.0.0.1", RootDir: t.TempDir(), PodLogsDir: t.TempDir(),
		CgroupsPerQOS: ptr.To(false), Runtime: cri, RuntimeOnHost: ptr.To(false), Client: clientgo.Adapt(api),
		Machine: &nodestatus.MachineInfo{NumCPU: 4, MemoryCapacity: 8 << 30, RootfsCapacity: 100 << 30, MachineID: "m1"}}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "default", UID: "job-uid"},
		Spec: v1.PodSpec{NodeName: "n1", RestartPolicy: v1.RestartPolicyNever,
			Containers: []v1.Container{{Name: "c", Image: fake.TestbinImage, Args: []string{"serve"}}}}}
	_, err := api.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	sandboxReady := func() bool {
		sbs, err := cri.ListPodSandbox(ctx, nil)
		require.NoError(t, err)
		for _, sb := range sbs {
			if sb.GetMetadata().GetUid() == string(pod.UID) && sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
				return true
			}
		}
		return false
	}

	first, err := nodeagent.New(ctx, cfg)
	require.NoError(t, err)
	firstCtx, kill := context.WithCancel(ctx)
	firstDone := make(chan error, 1)
	go func() { firstDone <- first.Run(firstCtx) }()
	poll.Eventually(t, running(first, "job"), 20*time.Second, 10*time.Millisecond, "the pod runs")
	require.True(t, sandboxReady())
	kill()
	require.NoError(t, <-firstDone)

	// Its final status was written; its termination was not.
	failed, err := api.CoreV1().Pods("default").Get(ctx, "job", metav1.GetOptions{})
	require.NoError(t, err)
	failed.Status.Phase = v1.PodFailed
	failed.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "c", Image: fake.TestbinImage,
		State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 3, Reason: "Error"}}}}
	_, err = api.CoreV1().Pods("default").UpdateStatus(ctx, failed, metav1.UpdateOptions{})
	require.NoError(t, err)

	second, err := nodeagent.New(ctx, cfg)
	require.NoError(t, err)
	f.InjectError("ListPodSandbox", status.Error(codes.Unavailable, "the runtime is starting"), 0)
	api.ClearActions()
	runAgent(t, ctx, second)
	poll.Eventually(t, func() bool {
		for _, a := range api.Actions() {
			if a.GetVerb() == "watch" && a.GetResource().Resource == "pods" {
				return true
			}
		}
		return false
	}, 20*time.Second, 10*time.Millisecond, "the API source listed and watches the pods")
	require.True(t, podNamed(second, "job") == nil, "a pod synchronized before the PLEG relisted")
	f.ClearInjections()
	poll.Eventually(t, func() bool { return !sandboxReady() }, 20*time.Second, 10*time.Millisecond,
		"the finished pod's sandbox stopped")
}
