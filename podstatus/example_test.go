package podstatus_test

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/podstatus"
)

// A container that keeps crashing: the last sync could not restart it.
func Example() {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "web", Image: "nginx:1"}}}}
	inRuntime := &kc.PodStatus{ID: pod.UID,
		SandboxStatuses:   []*kc.SandboxStatus{{ID: "s1", State: kc.SandboxStateReady}},
		ContainerStatuses: []*kc.ContainerStatus{{ID: "c3", Name: "web", SandboxID: "s1", State: kc.ContainerStateExited, ExitCode: 1, RestartCount: 2}}}

	reasons := podstatus.NewReasonCache()
	reasons.Update(pod.UID, lastSync{{Container: "web", Reason: "CrashLoopBackOff", Message: "back-off 40s"}})
	status := podstatus.Generate(podstatus.Input{Pod: pod, Runtime: inRuntime, Reasons: reasons.Get(pod.UID),
		RuntimeName: "containerd", HostIPs: []string{"127.0.0.1"}})

	statuses := podstatus.NewManager(clocktesting.NewFakeClock(t0))
	statuses.SetPodStatus(pod, status)
	published, _ := statuses.PodStatus(pod.UID)
	c := published.ContainerStatuses[0]
	fmt.Println(published.Phase, c.State.Waiting.Reason, c.LastTerminationState.Terminated.ExitCode, c.RestartCount)
	for _, cond := range published.Conditions {
		fmt.Println(strings.TrimSpace(fmt.Sprint(cond.Type, " ", cond.Status, " ", cond.Reason)))
	}
	// Output:
	// Running CrashLoopBackOff 1 2
	// PodReadyToStartContainers True
	// Initialized True
	// Ready False ContainersNotReady
	// ContainersReady False ContainersNotReady
	// PodScheduled True
}

// lastSync stands for a *kuberuntime.SyncResult.
type lastSync []kc.StartResult

func (s lastSync) StartResults() []kc.StartResult { return s }
