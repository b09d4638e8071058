package podstatus_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/podstatus"
)

func rr(cpuReq, cpuLim, memReq, memLim string) v1.ResourceRequirements {
	r := v1.ResourceRequirements{Requests: v1.ResourceList{}, Limits: v1.ResourceList{}}
	for list, kv := range map[*v1.ResourceList][2]string{&r.Requests: {cpuReq, memReq}, &r.Limits: {cpuLim, memLim}} {
		if kv[0] != "" {
			(*list)[v1.ResourceCPU] = resource.MustParse(kv[0])
		}
		if kv[1] != "" {
			(*list)[v1.ResourceMemory] = resource.MustParse(kv[1])
		}
	}
	return r
}

// TestStatusResources: the kubelet's convertContainerStatusResources.
func TestStatusResources(t *testing.T) {
	for _, tc := range []struct {
		name      string
		allocated v1.ResourceRequirements
		state     kc.ContainerState
		reported  *kc.ContainerResources
		actuated  *v1.ResourceRequirements
		want      v1.ResourceRequirements
	}{
		{name: "not running: the allocation", allocated: rr("200m", "400m", "64Mi", "128Mi"), state: kc.ContainerStateExited,
			reported: &kc.ContainerResources{CPURequestMilli: 100}, want: rr("200m", "400m", "64Mi", "128Mi")},
		{name: "running: what the runtime reports, the memory request as actuated", allocated: rr("200m", "400m", "64Mi", "128Mi"),
			state: kc.ContainerStateRunning, reported: &kc.ContainerResources{CPURequestMilli: 100, CPULimitMilli: 300, MemoryLimitBytes: 96 << 20},
			actuated: &v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("48Mi")}},
			want:     rr("100m", "300m", "48Mi", "96Mi")},
		{name: "equivalents: 1m shows as 1m, not the 2 shares' 2m", allocated: rr("1m", "5m", "", ""), state: kc.ContainerStateRunning,
			reported: &kc.ContainerResources{CPURequestMilli: 2, CPULimitMilli: 10}, want: rr("1m", "5m", "", "")},
		{name: "nothing reported: as actuated", allocated: rr("200m", "400m", "", "128Mi"), state: kc.ContainerStateRunning,
			actuated: ptrTo(rr("100m", "300m", "", "96Mi")), want: rr("100m", "300m", "", "96Mi")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := spec(v1.RestartPolicyAlways, nil, nil, "c")
			pod.Spec.Containers[0].Resources = tc.allocated
			in := podstatus.Input{Pod: pod, Runtime: &kc.PodStatus{ContainerStatuses: []*kc.ContainerStatus{
				{ID: "1", Name: "c", State: tc.state, Resources: tc.reported}}}}
			if tc.actuated != nil {
				in.Actuated = func(string) (v1.ResourceRequirements, bool) { return *tc.actuated, true }
			}
			got := podstatus.Generate(in).ContainerStatuses[0]
			require.NotNil(t, got.Resources)
			assert.True(t, equalResources(tc.want, *got.Resources), "got %v, want %v", got.Resources, tc.want)
			assert.Equal(t, tc.allocated.Requests, got.AllocatedResources)
		})
	}
}

func equalResources(a, b v1.ResourceRequirements) bool {
	eq := func(x, y v1.ResourceList) bool {
		if len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || v.Cmp(w) != 0 {
				return false
			}
		}
		return true
	}
	return eq(a.Requests, b.Requests) && eq(a.Limits, b.Limits)
}

func ptrTo[T any](v T) *T { return &v }
