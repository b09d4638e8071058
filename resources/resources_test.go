package resources

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestMilliCPUToShares(t *testing.T) {
	for _, tc := range []struct {
		milli int64
		want  uint64
	}{
		{0, 2}, {1, 2}, {1, 2}, {2, 2}, {100, 102}, {250, 256}, {1000, 1024}, {1500, 1536},
		{256000, 262144}, {300000, 262144},
	} {
		assert.Equal(t, tc.want, MilliCPUToShares(tc.milli), "milliCPU=%d", tc.milli)
	}
}

func TestMilliCPUToQuota(t *testing.T) {
	for _, tc := range []struct {
		milli, period, want int64
	}{
		{0, 100000, 0}, {5, 100000, 1000}, {9, 100000, 1000}, {10, 100000, 1000},
		{200, 100000, 20000}, {500, 100000, 50000}, {1000, 100000, 100000}, {1500, 100000, 150000},
		{500, 50000, 25000},
	} {
		assert.Equal(t, tc.want, MilliCPUToQuota(tc.milli, tc.period), "milliCPU=%d period=%d", tc.milli, tc.period)
	}
}

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

func TestComputePodQOS(t *testing.T) {
	for _, tc := range []struct {
		name       string
		containers []v1.Container
		init       []v1.Container
		want       v1.PodQOSClass
	}{
		{"no resources", []v1.Container{ctr(nil, nil)}, nil, v1.PodQOSBestEffort},
		{"zero requests", []v1.Container{ctr(rl("cpu", "0", "memory", "0"), nil)}, nil, v1.PodQOSBestEffort},
		{"only other resources", []v1.Container{ctr(rl("ephemeral-storage", "1Gi"), rl("ephemeral-storage", "1Gi"))}, nil, v1.PodQOSBestEffort},
		{"equal limits", []v1.Container{ctr(rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))}, nil, v1.PodQOSGuaranteed},
		// Undefaulted: the kubelet relies on requests being defaulted from limits.
		{"limits only, undefaulted", []v1.Container{ctr(nil, rl("cpu", "1", "memory", "1Gi"))}, nil, v1.PodQOSBurstable},
		{"1000m equals 1", []v1.Container{ctr(rl("cpu", "1000m", "memory", "1Gi"), rl("cpu", "1", "memory", "1024Mi"))}, nil, v1.PodQOSGuaranteed},
		{"request below limit", []v1.Container{ctr(rl("cpu", "500m", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))}, nil, v1.PodQOSBurstable},
		{"cpu limit only", []v1.Container{ctr(nil, rl("cpu", "1"))}, nil, v1.PodQOSBurstable},
		{"requests only", []v1.Container{ctr(rl("memory", "64Mi"), nil)}, nil, v1.PodQOSBurstable},
		{"one guaranteed one best effort", []v1.Container{
			ctr(rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi")), ctr(nil, nil)}, nil, v1.PodQOSBurstable},
		{"init container burstable", []v1.Container{ctr(rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))},
			[]v1.Container{ctr(rl("cpu", "100m"), nil)}, v1.PodQOSBurstable},
		{"init container makes best effort burstable", []v1.Container{ctr(nil, nil)},
			[]v1.Container{ctr(rl("memory", "1Mi"), nil)}, v1.PodQOSBurstable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{Containers: tc.containers, InitContainers: tc.init}}
			assert.Equal(t, tc.want, ComputePodQOS(pod))
			assert.Equal(t, tc.want, PodQOSClass(pod))
		})
	}
	pod := &v1.Pod{Status: v1.PodStatus{QOSClass: v1.PodQOSGuaranteed}}
	assert.Equal(t, v1.PodQOSGuaranteed, PodQOSClass(pod), "status wins")
}

func TestContainerResources(t *testing.T) {
	const gi = int64(1 << 30)
	prio := int32(2000000000)
	for _, tc := range []struct {
		name                          string
		pod                           v1.Pod
		opts                          Options
		shares, quota, period, memory int64
		oom                           int64
	}{
		{name: "best effort", pod: podWith(ctr(nil, nil)), opts: Options{MemoryCapacity: 4 * gi},
			shares: 2, quota: 0, period: 100000, oom: 1000},
		{name: "guaranteed", pod: podWith(ctr(rl("cpu", "250m", "memory", "128Mi"), rl("cpu", "250m", "memory", "128Mi"))),
			shares: 256, quota: 25000, period: 100000, memory: 128 << 20, oom: -997},
		{name: "limit only cpu gives shares from limit", pod: podWith(ctr(rl("memory", "1Gi"), rl("cpu", "2"))), opts: Options{MemoryCapacity: 4 * gi},
			shares: 2048, quota: 200000, period: 100000, oom: 750},
		{name: "burstable tiny request", pod: podWith(ctr(rl("memory", "1"), nil)), opts: Options{MemoryCapacity: 4 * gi},
			shares: 2, period: 100000, oom: 999},
		{name: "burstable request near capacity", pod: podWith(ctr(rl("memory", "4Gi", "cpu", "100m"), nil)), opts: Options{MemoryCapacity: 4 * gi},
			shares: 102, period: 100000, oom: 3},
		{name: "quota disabled", pod: podWith(ctr(rl("cpu", "1"), rl("cpu", "2"))), opts: Options{DisableCPUQuota: true},
			shares: 1024, oom: 0},
		{name: "custom period", pod: podWith(ctr(nil, rl("cpu", "500m"))), opts: Options{CPUPeriod: 50000},
			shares: 512, quota: 25000, period: 50000},
		{name: "static node-critical", pod: func() v1.Pod {
			p := podWith(ctr(nil, nil))
			p.Spec.PriorityClassName = "system-node-critical"
			p.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
			return p
		}(), shares: 2, period: 100000, oom: -997},
		{name: "api node-critical by priority", pod: func() v1.Pod {
			p := podWith(ctr(nil, nil))
			p.Spec.PriorityClassName = "system-node-critical"
			p.Spec.Priority = &prio
			return p
		}(), shares: 2, period: 100000, oom: -997},
		{name: "api node-critical class without priority is not critical", pod: func() v1.Pod {
			p := podWith(ctr(nil, nil))
			p.Spec.PriorityClassName = "system-node-critical"
			return p
		}(), shares: 2, period: 100000, oom: 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ContainerResources(&tc.pod, &tc.pod.Spec.Containers[0], tc.opts)
			assert.Equal(t, tc.shares, r.CPUShares, "shares")
			assert.Equal(t, tc.quota, r.CPUQuota, "quota")
			assert.Equal(t, tc.period, r.CPUPeriod, "period")
			assert.Equal(t, tc.memory, r.MemoryLimitInBytes, "memory")
			assert.Equal(t, tc.oom, r.OOMScoreAdj, "oom_score_adj")
		})
	}
}

func podWith(c v1.Container) v1.Pod {
	return v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{c}}}
}
