package podsync

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubelet SyncPod: "existingStatus, ok := statusManager.GetPodStatus(uid);
// if !ok || existing Pending && new Running && firstSeen set: observe
// PodStartDuration", after terminal pods have returned.
func TestPodStartDurationFollowsTheKubeletRule(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	seen := map[string]string{configSeenAnnotation: t0.Format(time.RFC3339Nano)}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		had         bool
		prev, phase v1.PodPhase
		observed    bool
	}{
		{"kubelet SyncPod: the pod's first status is observed", seen, false, "", v1.PodPending, true},
		{"kubelet SyncPod: Pending to Running is observed", seen, true, v1.PodPending, v1.PodRunning, true},
		{"kubelet SyncPod: Running again is not", seen, true, v1.PodRunning, v1.PodRunning, false},
		{"kubelet SyncPod: still Pending is not", seen, true, v1.PodPending, v1.PodPending, false},
		{"kubelet SyncPod: a terminal pod returns before the observation", seen, false, "", v1.PodSucceeded, false},
		{"kubelet SyncPod: no config.seen, nothing to measure from", nil, true, v1.PodPending, v1.PodRunning, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMetrics()
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: tc.annotations}}
			m.podStatusPublished(pod, v1.PodStatus{Phase: tc.prev}, tc.had, tc.phase, t0.Add(1500*time.Millisecond))
			var out dto.Metric
			require.NoError(t, m.start.Write(&out))
			if tc.observed {
				assert.Equal(t, uint64(1), out.GetHistogram().GetSampleCount())
				assert.InDelta(t, 1.5, out.GetHistogram().GetSampleSum(), 1e-9, "seconds since config.seen")
			} else {
				assert.Zero(t, out.GetHistogram().GetSampleCount())
			}
		})
	}
}
