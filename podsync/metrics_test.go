package podsync_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/podstatus"
	"github.com/nodekit-dev/nodekit/podsync"
	"github.com/nodekit-dev/nodekit/podworkers"
)

// kubelet podWorkerLoop: PodWorkerDuration{operation_type} is observed
// after each work, labelled by its update type (SyncPodType.String():
// create, update, sync, kill).
func TestPodWorkerDurationByOperationType(t *testing.T) {
	m := podsync.NewMetrics()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u1"}}
	newer := pod.DeepCopy()
	for _, w := range []struct {
		typ     podworkers.WorkType
		pod     *v1.Pod
		updated bool
		took    time.Duration
	}{
		{podworkers.SyncPod, pod, false, 2 * time.Second},         // create: the first sync
		{podworkers.SyncPod, pod, false, 30 * time.Millisecond},   // sync
		{podworkers.SyncPod, newer, true, 200 * time.Millisecond}, // update: its source changed it
		{podworkers.SyncPod, newer, false, 40 * time.Millisecond}, // sync: a new object with only its status new is no update
		{podworkers.TerminatePod, newer, false, 3 * time.Second},  // kill
		{podworkers.SyncPod, newer, true, 10 * time.Millisecond},  // create again once forgotten
	} {
		m.ObserveWork(podworkers.Work{Type: w.typ, Pod: w.pod, Updated: w.updated}, w.took, nil)
	}
	require.NoError(t, testutil.CollectAndCompare(m, strings.NewReader(`
# HELP kubelet_pod_worker_duration_seconds Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync
# TYPE kubelet_pod_worker_duration_seconds histogram
`+bucketLines("create", map[float64]int{0.01: 1, 2.5: 2}, 2.01, 2)+
		bucketLines("kill", map[float64]int{5: 1}, 3, 1)+
		bucketLines("sync", map[float64]int{0.05: 2}, 0.07, 2)+
		bucketLines("update", map[float64]int{0.25: 1}, 0.2, 1)), "kubelet_pod_worker_duration_seconds"))
}

// bucketLines renders a DefBuckets histogram whose cumulative count
// reaches counts[le] at le.
func bucketLines(op string, counts map[float64]int, sum float64, count int) string {
	var b strings.Builder
	n := 0
	for _, le := range []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10} {
		if c, ok := counts[le]; ok {
			n = c
		}
		b.WriteString("kubelet_pod_worker_duration_seconds_bucket{operation_type=\"" + op + "\",le=\"" + trim(le) + "\"} " + itoa(n) + "\n")
	}
	b.WriteString("kubelet_pod_worker_duration_seconds_bucket{operation_type=\"" + op + "\",le=\"+Inf\"} " + itoa(count) + "\n")
	b.WriteString("kubelet_pod_worker_duration_seconds_sum{operation_type=\"" + op + "\"} " + trim(sum) + "\n")
	b.WriteString("kubelet_pod_worker_duration_seconds_count{operation_type=\"" + op + "\"} " + itoa(count) + "\n")
	return b.String()
}

func trim(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
func itoa(i int) string     { return strconv.Itoa(i) }

// kubelet SyncPod observes PodStartDuration from config.seen when it
// publishes the pod's first status.
func TestSyncObservesPodStartDuration(t *testing.T) {
	e := newEnv(t)
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0.Add(4 * time.Second))
	metrics := podsync.NewMetrics()
	syncer, err := podsync.New(podsync.Config{Runtime: e.mgr, Prober: e.probes, Cache: e.cache, Statuses: e.statuses,
		Reasons: podstatus.NewReasonCache(), RuntimeName: "nodekit-fake", Metrics: metrics, Clock: clk})
	require.NoError(t, err)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1",
		Annotations: map[string]string{"kubernetes.io/config.seen": t0.Format(time.RFC3339Nano)}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: testImage, Args: []string{"serve"}}}}}
	ctx := context.Background()
	require.NoError(t, syncer.Sync(ctx, podworkers.Work{Type: podworkers.SyncPod, Pod: pod}))
	st, err := e.mgr.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	require.NoError(t, err)
	require.NoError(t, syncer.Sync(ctx, podworkers.Work{Type: podworkers.SyncPod, Pod: pod, Status: st})) // Running again: not observed
	require.NoError(t, testutil.CollectAndCompare(metrics, strings.NewReader(`
# HELP kubelet_pod_start_duration_seconds Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run
# TYPE kubelet_pod_start_duration_seconds histogram
kubelet_pod_start_duration_seconds_bucket{le="0.5"} 0
kubelet_pod_start_duration_seconds_bucket{le="1"} 0
kubelet_pod_start_duration_seconds_bucket{le="2"} 0
kubelet_pod_start_duration_seconds_bucket{le="3"} 0
kubelet_pod_start_duration_seconds_bucket{le="4"} 1
kubelet_pod_start_duration_seconds_bucket{le="5"} 1
kubelet_pod_start_duration_seconds_bucket{le="6"} 1
kubelet_pod_start_duration_seconds_bucket{le="8"} 1
kubelet_pod_start_duration_seconds_bucket{le="10"} 1
kubelet_pod_start_duration_seconds_bucket{le="20"} 1
kubelet_pod_start_duration_seconds_bucket{le="30"} 1
kubelet_pod_start_duration_seconds_bucket{le="45"} 1
kubelet_pod_start_duration_seconds_bucket{le="60"} 1
kubelet_pod_start_duration_seconds_bucket{le="120"} 1
kubelet_pod_start_duration_seconds_bucket{le="180"} 1
kubelet_pod_start_duration_seconds_bucket{le="240"} 1
kubelet_pod_start_duration_seconds_bucket{le="300"} 1
kubelet_pod_start_duration_seconds_bucket{le="360"} 1
kubelet_pod_start_duration_seconds_bucket{le="480"} 1
kubelet_pod_start_duration_seconds_bucket{le="600"} 1
kubelet_pod_start_duration_seconds_bucket{le="900"} 1
kubelet_pod_start_duration_seconds_bucket{le="1200"} 1
kubelet_pod_start_duration_seconds_bucket{le="1800"} 1
kubelet_pod_start_duration_seconds_bucket{le="2700"} 1
kubelet_pod_start_duration_seconds_bucket{le="3600"} 1
kubelet_pod_start_duration_seconds_bucket{le="+Inf"} 1
kubelet_pod_start_duration_seconds_sum 4
kubelet_pod_start_duration_seconds_count 1
`), "kubelet_pod_start_duration_seconds"))
}

// kubelet status manager: PodStatusSyncDuration, with the kubelet's
// buckets, observed to the millisecond.
func TestStatusSyncDuration(t *testing.T) {
	m := podsync.NewMetrics()
	for _, d := range []time.Duration{7*time.Millisecond + 900*time.Microsecond, 80 * time.Millisecond, 1200 * time.Millisecond} {
		m.ObserveStatusSync(d)
	}
	require.NoError(t, testutil.CollectAndCompare(m, strings.NewReader(`
# HELP kubelet_pod_status_sync_duration_seconds Duration in seconds to sync a pod status update. Measures time from detection of a change to pod status until the API is successfully updated for that pod, even if multiple intevening changes to pod status occur.
# TYPE kubelet_pod_status_sync_duration_seconds histogram
kubelet_pod_status_sync_duration_seconds_bucket{le="0.01"} 1
kubelet_pod_status_sync_duration_seconds_bucket{le="0.05"} 1
kubelet_pod_status_sync_duration_seconds_bucket{le="0.1"} 2
kubelet_pod_status_sync_duration_seconds_bucket{le="0.5"} 2
kubelet_pod_status_sync_duration_seconds_bucket{le="1"} 2
kubelet_pod_status_sync_duration_seconds_bucket{le="5"} 3
kubelet_pod_status_sync_duration_seconds_bucket{le="10"} 3
kubelet_pod_status_sync_duration_seconds_bucket{le="20"} 3
kubelet_pod_status_sync_duration_seconds_bucket{le="30"} 3
kubelet_pod_status_sync_duration_seconds_bucket{le="45"} 3
kubelet_pod_status_sync_duration_seconds_bucket{le="60"} 3
kubelet_pod_status_sync_duration_seconds_bucket{le="+Inf"} 3
kubelet_pod_status_sync_duration_seconds_sum 1.287
kubelet_pod_status_sync_duration_seconds_count 3
`), "kubelet_pod_status_sync_duration_seconds"))
}
