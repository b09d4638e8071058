package podstatus_test

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/podstatus"
)

// BenchmarkStatusSync: pods written per second by the sync loop, on a
// node with 110 (the kubelet's default max-pods) or 1000 pods, each
// batch finding one pod changed (the usual case: changes come one by one)
// or all of them (after an outage). An op is one pod written: a batch's
// scan of every pod, then reading, merging, diffing and patching the
// changed one against a fake API that neither copies nor applies.
func BenchmarkStatusSync(b *testing.B) {
	for _, n := range []int{110, 1000} {
		for _, changing := range []string{"one", "all"} {
			b.Run(fmt.Sprintf("pods=%d/changed=%s", n, changing), func(b *testing.B) {
				benchmarkStatusSync(b, n, changing == "all")
			})
		}
	}
}

func benchmarkStatusSync(b *testing.B, n int, all bool) {
	clk := clocktesting.NewFakeClock(t0)
	pods := make([]*v1.Pod, n)
	for i := range pods {
		pods[i] = apiPod(fmt.Sprintf("uid-%d", i), fmt.Sprintf("pod-%d", i))
	}
	api := newFakeAPI(pods...)
	api.cheap = true
	statuses := podstatus.NewManager(clk)
	s, err := podstatus.NewSyncer(podstatus.SyncerConfig{API: api, Statuses: statuses, Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	ready := [2]v1.PodStatus{statusOf(false), statusOf(true)}
	for _, p := range pods {
		statuses.SetPodStatus(p, ready[0])
	}
	s.Sync(ctx)
	b.ReportAllocs()
	b.ResetTimer()
	written := 0
	for i := 0; written < b.N; i++ {
		if all {
			for _, p := range pods[:min(n, b.N-written)] {
				statuses.SetPodStatus(p, ready[(i+1)%2])
			}
		} else {
			statuses.SetPodStatus(pods[i%n], ready[(i/n+1)%2])
		}
		written += s.Sync(ctx)
	}
	b.ReportMetric(float64(written)/b.Elapsed().Seconds(), "pods/s")
}
