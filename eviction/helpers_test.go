package eviction

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const (
	Ki = int64(1) << 10
	Mi = int64(1) << 20
	Gi = int64(1) << 30
)

func q(s string) *resource.Quantity { v := resource.MustParse(s); return &v }

func rl(kv ...string) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

// mkPod makes an API pod (uid = name) with one container "c" per
// requests/limits given, then applies opts.
func mkPod(name string, requests, limits v1.ResourceList, opts ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name),
		Annotations: map[string]string{"kubernetes.io/config.source": "api"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: requests, Limits: limits}}}}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func priority(p int32) func(*v1.Pod) { return func(pod *v1.Pod) { pod.Spec.Priority = &p } }

func annotate(k, v string) func(*v1.Pod) { return func(pod *v1.Pod) { pod.Annotations[k] = v } }

func u64(v int64) *uint64 { x := uint64(v); return &x }

// memStats is a pod's stats with its container "c"'s working set.
func memStats(uid string, ws int64) statsapi.PodStats {
	return statsapi.PodStats{PodRef: statsapi.PodReference{Name: uid, Namespace: "ns", UID: uid},
		Memory:     &statsapi.MemoryStats{WorkingSetBytes: u64(ws)},
		Containers: []statsapi.ContainerStats{{Name: "c", Memory: &statsapi.MemoryStats{WorkingSetBytes: u64(ws)}}}}
}

// diskStats is a pod's stats with container "c"'s writable layer and
// logs, and volumes by name.
func diskStats(uid string, rootfs, logs int64, volumes map[string]int64) statsapi.PodStats {
	s := statsapi.PodStats{PodRef: statsapi.PodReference{Name: uid, Namespace: "ns", UID: uid},
		Containers: []statsapi.ContainerStats{{Name: "c",
			Rootfs: &statsapi.FsStats{UsedBytes: u64(rootfs), InodesUsed: u64(rootfs / 4096)},
			Logs:   &statsapi.FsStats{UsedBytes: u64(logs), InodesUsed: u64(1)}}}}
	total := rootfs + logs
	for name, used := range volumes {
		s.VolumeStats = append(s.VolumeStats, statsapi.VolumeStats{Name: name, FsStats: statsapi.FsStats{UsedBytes: u64(used), InodesUsed: u64(used / 4096)}})
		total += used
	}
	s.EphemeralStorage = &statsapi.FsStats{UsedBytes: u64(total)}
	return s
}

func names(pods []*v1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func hard(signal string, v Value) Threshold { return Threshold{Signal: signal, Value: v} }

func qv(s string) Value { return Value{Quantity: q(s)} }

func pct(p float64) Value { return Value{Percentage: p} }

func resourceQ(v int64) *resource.Quantity { return resource.NewQuantity(v, resource.BinarySI) }
