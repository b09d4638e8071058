package podstartup_test

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/podstartup"
)

// A pod's startup as the agent's parts tell it to the Tracker: seen on the
// watch, its image pulled for 2 s, its status written with the container
// running, then that status seen on the watch 4 s after the pod's creation.
func Example() {
	created := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(created)
	tracker := podstartup.New(podstartup.Config{Clock: clk})
	registry := prometheus.NewRegistry()
	registry.MustRegister(tracker)

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "u1",
		CreationTimestamp: metav1.NewTime(created)}}
	tracker.ObservedPodOnWatch(pod, clk.Now()) // the mux (podsource.MuxConfig.Observer)
	tracker.RecordImageStartedPulling(pod.UID) // the runtime manager (kuberuntime.ManagerConfig.Startup)
	clk.Step(2 * time.Second)
	tracker.RecordImageFinishedPulling(pod.UID)

	clk.Step(time.Second)
	running := pod.DeepCopy()
	started := metav1.NewTime(clk.Now())
	running.Status = v1.PodStatus{Phase: v1.PodRunning, StartTime: &started, ContainerStatuses: []v1.ContainerStatus{
		{Name: "web", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: started}}}}}
	tracker.RecordStatusUpdated(running) // the status writer (podstatus.APIWriterConfig.StatusWritten)
	clk.Step(time.Second)
	tracker.ObservedPodOnWatch(running, clk.Now())

	families, _ := registry.Gather()
	for _, f := range families {
		m := f.GetMetric()[0]
		if h := m.GetHistogram(); h != nil {
			fmt.Printf("%s: %d pod, %.0f s\n", f.GetName(), h.GetSampleCount(), h.GetSampleSum())
		} else {
			fmt.Printf("%s: %.0f s\n", f.GetName(), m.GetGauge().GetValue())
		}
	}
	// Output:
	// kubelet_first_network_pod_start_sli_duration_seconds: 2 s
	// kubelet_pod_start_sli_duration_seconds: 1 pod, 2 s
	// kubelet_pod_start_total_duration_seconds: 1 pod, 4 s
}
