package kuberuntime_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/kuberuntime"
)

func reqs(cpuReq, cpuLim, memLim string) v1.ResourceRequirements {
	r := v1.ResourceRequirements{Requests: v1.ResourceList{}, Limits: v1.ResourceList{}}
	for _, q := range []struct {
		list v1.ResourceList
		name v1.ResourceName
		v    string
	}{{r.Requests, v1.ResourceCPU, cpuReq}, {r.Limits, v1.ResourceCPU, cpuLim}, {r.Limits, v1.ResourceMemory, memLim}} {
		if q.v != "" {
			q.list[q.name] = resource.MustParse(q.v)
		}
	}
	return r
}

// TestComputeResizeActions: the kubelet's computePodResizeAction, per
// running container, against what it was given.
func TestComputeResizeActions(t *testing.T) {
	restartMem := []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
	for _, tc := range []struct {
		name        string
		spec        v1.ResourceRequirements
		policy      []v1.ContainerResizePolicy
		given       *v1.ResourceRequirements
		state       kc.ContainerState
		wantUpdate  bool
		wantRestart bool
		decrease    bool
	}{
		{name: "unchanged", spec: reqs("100m", "200m", "64Mi"), given: ptr.To(reqs("100m", "200m", "64Mi")), state: kc.ContainerStateRunning},
		{name: "cpu up", spec: reqs("200m", "200m", "64Mi"), given: ptr.To(reqs("100m", "200m", "64Mi")), state: kc.ContainerStateRunning, wantUpdate: true},
		{name: "memory down", spec: reqs("100m", "200m", "32Mi"), given: ptr.To(reqs("100m", "200m", "64Mi")), state: kc.ContainerStateRunning,
			wantUpdate: true, decrease: true},
		{name: "memory changed, RestartContainer", spec: reqs("100m", "200m", "32Mi"), policy: restartMem, given: ptr.To(reqs("100m", "200m", "64Mi")),
			state: kc.ContainerStateRunning, wantRestart: true},
		{name: "cpu changed, memory RestartContainer: in place", spec: reqs("300m", "400m", "64Mi"), policy: restartMem,
			given: ptr.To(reqs("100m", "200m", "64Mi")), state: kc.ContainerStateRunning, wantUpdate: true},
		{name: "equal in another unit", spec: reqs("0.1", "200m", "64Mi"), given: ptr.To(reqs("100m", "200m", "67108864")), state: kc.ContainerStateRunning},
		{name: "not running: started with the new resources", spec: reqs("200m", "200m", "64Mi"), given: ptr.To(reqs("100m", "200m", "64Mi")),
			state: kc.ContainerStateExited},
		{name: "never recorded: updated in place, never restarted", spec: reqs("100m", "200m", "32Mi"), policy: restartMem,
			state: kc.ContainerStateRunning, wantUpdate: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: tc.spec, ResizePolicy: tc.policy}}}}
			st := &kc.PodStatus{ContainerStatuses: []*kc.ContainerStatus{{ID: "id1", Name: "c", State: tc.state}}}
			got := kuberuntime.ComputeResizeActions(pod, st, func(string) (v1.ResourceRequirements, bool) {
				if tc.given == nil {
					return v1.ResourceRequirements{}, false
				}
				return *tc.given, true
			})
			assert.Equal(t, tc.wantUpdate, len(got.Update) == 1, "update")
			assert.Equal(t, tc.wantRestart, len(got.Restart) == 1, "restart")
			if tc.wantUpdate {
				assert.Equal(t, kuberuntime.ContainerToResize{Name: "c", ID: "id1", Index: 0, Decrease: tc.decrease}, got.Update[0])
			}
		})
	}
}
