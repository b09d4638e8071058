package cgroupmgr

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func rl(kv ...string) v1.ResourceList {
	l := v1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func ctr(req, lim v1.ResourceList) v1.Container {
	return v1.Container{Name: "c", Resources: v1.ResourceRequirements{Requests: req, Limits: lim}}
}

func podOf(uid string, init []v1.Container, cs ...v1.Container) *v1.Pod {
	p := &v1.Pod{Spec: v1.PodSpec{InitContainers: init, Containers: cs}}
	p.UID = types.UID(uid)
	return p
}

func TestResourceConfigForPod(t *testing.T) {
	sidecar := ctr(rl("cpu", "100m", "memory", "10Mi"), rl("cpu", "100m", "memory", "10Mi"))
	sidecar.RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		opts PodOptions
		want ResourceConfig
	}{
		{"besteffort", podOf("a", nil, ctr(nil, nil)), PodOptions{},
			ResourceConfig{CPUShares: ptr.To[uint64](2)}},
		{"guaranteed", podOf("a", nil, ctr(rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))), PodOptions{},
			ResourceConfig{CPUShares: ptr.To[uint64](1024), CPUQuota: ptr.To[int64](100000), CPUPeriod: ptr.To[uint64](100000), Memory: ptr.To[int64](1 << 30)}},
		{"guaranteed quota off", podOf("a", nil, ctr(rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))), PodOptions{DisableCPUQuota: true},
			ResourceConfig{CPUShares: ptr.To[uint64](1024), CPUQuota: ptr.To[int64](-1), CPUPeriod: ptr.To[uint64](100000), Memory: ptr.To[int64](1 << 30)}},
		{"burstable request only", podOf("a", nil, ctr(rl("cpu", "100m"), nil)), PodOptions{},
			ResourceConfig{CPUShares: ptr.To[uint64](102)}},
		{"burstable all limits", podOf("a", nil,
			ctr(rl("cpu", "100m", "memory", "100Mi"), rl("cpu", "200m", "memory", "200Mi")),
			ctr(rl("cpu", "100m", "memory", "100Mi"), rl("cpu", "300m", "memory", "100Mi"))), PodOptions{CPUPeriod: 50000},
			ResourceConfig{CPUShares: ptr.To[uint64](204), CPUQuota: ptr.To[int64](25000), CPUPeriod: ptr.To[uint64](50000), Memory: ptr.To[int64](300 << 20)}},
		{"burstable one container without limits", podOf("a", nil,
			ctr(rl("cpu", "100m", "memory", "100Mi"), rl("cpu", "200m", "memory", "200Mi")),
			ctr(rl("cpu", "100m"), nil)), PodOptions{},
			ResourceConfig{CPUShares: ptr.To[uint64](204)}},
		{"init container max", podOf("a", []v1.Container{ctr(rl("cpu", "2", "memory", "2Gi"), rl("cpu", "2", "memory", "2Gi"))},
			ctr(rl("cpu", "500m", "memory", "1Gi"), rl("cpu", "500m", "memory", "1Gi"))), PodOptions{},
			ResourceConfig{CPUShares: ptr.To[uint64](2048), CPUQuota: ptr.To[int64](200000), CPUPeriod: ptr.To[uint64](100000), Memory: ptr.To[int64](2 << 30)}},
		{"sidecar adds", podOf("a", []v1.Container{sidecar},
			ctr(rl("cpu", "500m", "memory", "100Mi"), rl("cpu", "500m", "memory", "100Mi"))), PodOptions{},
			ResourceConfig{CPUShares: ptr.To[uint64](614), CPUQuota: ptr.To[int64](60000), CPUPeriod: ptr.To[uint64](100000), Memory: ptr.To[int64](110 << 20)}},
		{"overhead added, memory qos", func() *v1.Pod {
			p := podOf("a", nil, ctr(rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi")))
			p.Spec.Overhead = rl("cpu", "250m", "memory", "64Mi")
			return p
		}(), PodOptions{MemoryQoS: true},
			ResourceConfig{CPUShares: ptr.To[uint64](1280), CPUQuota: ptr.To[int64](125000), CPUPeriod: ptr.To[uint64](100000),
				Memory: ptr.To[int64](1<<30 + 64<<20), MemoryMin: ptr.To[int64](1<<30 + 64<<20)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResourceConfigForPod(tc.pod, tc.opts)
			require.NoError(t, err)
			assert.Equal(t, tc.want, *got)
		})
	}
}

func TestResourceConfigForPodRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want string
	}{
		{"request above limit", podOf("a", nil, ctr(rl("cpu", "2"), rl("cpu", "1"))),
			"spec.containers[0](c).resources.requests[cpu]=2: must not exceed limit 1"},
		{"negative request", podOf("a", nil, ctr(rl("memory", "-1Mi"), nil)),
			"spec.containers[0](c).resources.requests[memory]=-1Mi: must not be negative"},
		{"negative init limit", podOf("a", []v1.Container{ctr(nil, rl("cpu", "-1"))}, ctr(nil, nil)),
			"spec.initContainers[0](c).resources.limits[cpu]=-1: must not be negative"},
		{"negative overhead", func() *v1.Pod {
			p := podOf("a", nil, ctr(nil, nil))
			p.Spec.Overhead = rl("cpu", "-100m")
			return p
		}(), "spec.overhead[cpu]=-100m: must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ResourceConfigForPod(tc.pod, PodOptions{})
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestQOSResourceConfigs(t *testing.T) {
	pods := []*v1.Pod{
		podOf("b1", nil, ctr(rl("cpu", "100m", "memory", "100Mi"), nil)),
		podOf("b2", nil, ctr(rl("cpu", "400m"), rl("cpu", "1"))),
		podOf("g", nil, ctr(rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))),
		podOf("be", nil, ctr(nil, nil)),
	}
	got, err := QOSResourceConfigs(pods, true)
	require.NoError(t, err)
	assert.Equal(t, uint64(512), *got[v1.PodQOSBurstable].CPUShares)
	assert.Equal(t, uint64(2), *got[v1.PodQOSBestEffort].CPUShares)
	assert.Equal(t, int64(100<<20), *got[v1.PodQOSBurstable].MemoryMin)
	assert.Equal(t, int64(1<<30+100<<20), *got[v1.PodQOSGuaranteed].MemoryMin)

	none, err := QOSResourceConfigs(nil, false)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), *none[v1.PodQOSBurstable].CPUShares)
	assert.Nil(t, none[v1.PodQOSBurstable].MemoryMin)
}
