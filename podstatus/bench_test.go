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
	s, err := podstatus.NewAPIWriter(podstatus.APIWriterConfig{API: api, Statuses: statuses, Clock: clk})
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

// BenchmarkStatusSyncPeriodic: a full pass (every SyncPeriod) over a node
// whose statuses are all written and unchanged, looking for drift. An op is
// one pass. held=same: the sources' copies are those seen before (the
// usual case: a pointer check per pod); held=new: a watch delivered each
// pod since with the status written, which the Manager found to be its
// own (a flag check per pod).
func BenchmarkStatusSyncPeriodic(b *testing.B) {
	for _, n := range []int{110, 1000} {
		for _, held := range []string{"same", "new"} {
			b.Run(fmt.Sprintf("pods=%d/held=%s", n, held), func(b *testing.B) {
				benchmarkStatusSyncPeriodic(b, n, held == "new")
			})
		}
	}
}

func benchmarkStatusSyncPeriodic(b *testing.B, n int, renew bool) {
	clk := clocktesting.NewFakeClock(t0)
	pods := make([]*v1.Pod, n)
	for i := range pods {
		pods[i] = apiPod(fmt.Sprintf("uid-%d", i), fmt.Sprintf("pod-%d", i))
	}
	api := newFakeAPI(pods...)
	api.cheap = true
	statuses := podstatus.NewManager(clk)
	s, err := podstatus.NewAPIWriter(podstatus.APIWriterConfig{API: api, Statuses: statuses, Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, p := range pods {
		statuses.SetPodStatus(p, statusOf(true))
	}
	s.Sync(ctx)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if renew {
			b.StopTimer()
			for _, p := range pods {
				c := *p
				c.Status, _ = statuses.PodStatus(p.UID)
				statuses.ReplacePod(&c)
			}
			b.StartTimer()
		}
		clk.Step(podstatus.DefaultSyncPeriod)
		if tried := s.Sync(ctx); tried != 0 {
			b.Fatalf("%d pods written, want none", tried)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/pod")
}
