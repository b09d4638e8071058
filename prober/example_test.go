package prober_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodekit-dev/nodekit/prober"
	"github.com/nodekit-dev/nodekit/statuscache"
)

// Started and Ready as the prober sets them: a running container without
// probes is ready; one with a readiness probe is not until it succeeds.
func Example() {
	m, _ := prober.New(prober.Config{Statuses: statuscache.New()})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: v1.PodSpec{Containers: []v1.Container{
			{Name: "plain"},
			{Name: "probed", ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{
				HTTPGet: &v1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8080)}}}},
		}}}
	m.AddPod(pod) // go m.Run(ctx) runs the probes
	defer m.RemovePod(pod.UID)

	running := v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	status := v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{
		{Name: "plain", ContainerID: "containerd://c1", State: running},
		{Name: "probed", ContainerID: "containerd://c2", State: running},
	}}
	m.UpdatePodStatus(pod, &status)
	for _, c := range status.ContainerStatuses {
		fmt.Println(c.Name, "started:", *c.Started, "ready:", c.Ready)
	}
	fmt.Println(m.Workers(), "probe worker")
	// Output:
	// plain started: true ready: true
	// probed started: true ready: false
	// 1 probe worker
}
