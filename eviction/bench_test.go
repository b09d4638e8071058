package eviction

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// benchPods makes n Burstable pods with a memory request, a priority of
// one of four classes and a working set around it, and their summary.
func benchPods(n int) ([]*v1.Pod, *statsapi.Summary) {
	pods := make([]*v1.Pod, n)
	s := &statsapi.Summary{}
	for i := range pods {
		name := fmt.Sprintf("pod-%05d", i)
		req := int64(64+(i*37)%512) * Mi
		ws := req + int64((i*7919)%257-128)*Mi
		pods[i] = mkPod(name, v1.ResourceList{v1.ResourceMemory: *resourceQ(req)}, nil, priority(int32(i%4)*1000))
		s.Pods = append(s.Pods, memStats(name, max(ws, 0)))
	}
	return pods, s
}

// BenchmarkRank10000Pods ranks 10,000 pods for memory.available.
func BenchmarkRank10000Pods(b *testing.B) {
	pods, s := benchPods(10000)
	stats := PodStatsFromSummary(s)
	work := make([]*v1.Pod, len(pods))
	b.ReportAllocs()
	for b.Loop() {
		copy(work, pods)
		Rank(SignalMemoryAvailable, work, stats, SharedFs)
	}
}

// BenchmarkEvaluate110Pods is one Synchronize over 110 pods from a
// summary whose node is under memory pressure: observations, thresholds,
// conditions, the local-storage check, ranking and the eviction of the
// first pod (to a killer that does nothing).
func BenchmarkEvaluate110Pods(b *testing.B) {
	pods, s := benchPods(110)
	s.Node.Memory = &statsapi.MemoryStats{AvailableBytes: u64(50 * Mi), WorkingSetBytes: u64(8*Gi - 50*Mi)}
	at := t0
	m, err := New(Config{
		Summary: SummaryProviderFunc(func(context.Context) (*statsapi.Summary, error) {
			at = at.Add(10 * time.Second)
			s.Node.Memory.Time = metav1.NewTime(at)
			return s, nil
		}),
		Pods:   ActivePodsFunc(func() []*v1.Pod { return pods }),
		Killer: PodKillerFunc(func(context.Context, Eviction) error { return nil }),
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		evicted, err := m.Synchronize(ctx)
		if err != nil || len(evicted) != 1 {
			b.Fatal(evicted, err)
		}
	}
}
