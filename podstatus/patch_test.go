package podstatus_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/nodekit-dev/nodekit/podstatus"
)

// kubeletPatch is the kubelet's preparePatchBytesForPodStatus.
func kubeletPatch(t testing.TB, uid types.UID, old, status v1.PodStatus) []byte {
	o, err := json.Marshal(v1.Pod{Status: old})
	require.NoError(t, err)
	n, err := json.Marshal(v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}, Status: status})
	require.NoError(t, err)
	p, err := strategicpatch.CreateTwoWayMergePatch(o, n, v1.Pod{})
	require.NoError(t, err)
	return p
}

// applyPatch is what the API server does with a pods/status patch.
func applyPatch(t testing.TB, pod *v1.Pod, patch []byte) *v1.Pod {
	b, err := json.Marshal(pod)
	require.NoError(t, err)
	out, err := strategicpatch.StrategicMergePatch(b, patch, v1.Pod{})
	require.NoError(t, err, "patch %s", patch)
	var p v1.Pod
	require.NoError(t, json.Unmarshal(out, &p))
	return &p
}

func cond(t v1.PodConditionType, s v1.ConditionStatus, at time.Duration) v1.PodCondition {
	return v1.PodCondition{Type: t, Status: s, LastTransitionTime: metav1.NewTime(t0.Add(at))}
}

func TestStatusPatchIsTheKubelets(t *testing.T) {
	start := metav1.NewTime(t0)
	base := v1.PodStatus{Phase: v1.PodRunning, StartTime: &start, PodIP: "10.0.0.7",
		PodIPs:                []v1.PodIP{{IP: "10.0.0.7"}},
		HostIPs:               []v1.HostIP{{IP: "192.168.0.1"}, {IP: "fd00::1"}},
		Conditions:            []v1.PodCondition{cond("Ready", "True", 0), cond("Initialized", "True", 0), cond("example.com/gate", "False", 0)},
		ContainerStatuses:     []v1.ContainerStatus{running("web", true), backingOff("db", 1)},
		ResourceClaimStatuses: []v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptr("gpu-1")}},
		Resources:             &v1.ResourceRequirements{Limits: v1.ResourceList{"cpu": resource.MustParse("1"), "memory": resource.MustParse("1Gi")}},
	}
	for _, tc := range []struct {
		name   string
		change func(*v1.PodStatus)
	}{
		{"nothing", func(*v1.PodStatus) {}},
		{"phase", func(s *v1.PodStatus) { s.Phase = v1.PodFailed; s.Reason = "Evicted" }},
		{"a condition's status", func(s *v1.PodStatus) { s.Conditions[0] = cond("Ready", "False", time.Minute) }},
		{"a condition added", func(s *v1.PodStatus) { s.Conditions = append(s.Conditions, cond("PodScheduled", "True", 0)) }},
		{"a condition removed", func(s *v1.PodStatus) { s.Conditions = s.Conditions[1:] }},
		{"conditions reordered", func(s *v1.PodStatus) { s.Conditions[0], s.Conditions[1] = s.Conditions[1], s.Conditions[0] }},
		{"all conditions gone", func(s *v1.PodStatus) { s.Conditions = nil }},
		{"pod IPs", func(s *v1.PodStatus) { s.PodIPs = append(s.PodIPs, v1.PodIP{IP: "fd00::7"}) }},
		{"host IPs", func(s *v1.PodStatus) { s.HostIPs = []v1.HostIP{{IP: "fd00::1"}} }},
		{"a container restarted", func(s *v1.PodStatus) { s.ContainerStatuses[1].RestartCount = 4 }},
		{"start time cleared", func(s *v1.PodStatus) { s.StartTime = nil }},
		{"an ephemeral container added (kubectl debug)", func(s *v1.PodStatus) {
			s.EphemeralContainerStatuses = []v1.ContainerStatus{waiting("debug", "ContainerCreating")}
		}},
		{"an ephemeral container terminated", func(s *v1.PodStatus) {
			s.EphemeralContainerStatuses = []v1.ContainerStatus{running("debug", false), exited("debug2", 0)}
		}},
		{"a claim status", func(s *v1.PodStatus) { s.ResourceClaimStatuses[0].ResourceClaimName = nil }},
		{"a claim status renamed", func(s *v1.PodStatus) { s.ResourceClaimStatuses[0].ResourceClaimName = ptr("gpu-2") }},
		{"resources", func(s *v1.PodStatus) {
			s.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{"cpu": resource.MustParse("2")}}
		}},
		{"everything", func(s *v1.PodStatus) { *s = v1.PodStatus{Phase: v1.PodPending} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status := *base.DeepCopy()
			tc.change(&status)
			checkPatch(t, "u1", base, status)
			checkPatch(t, "u1", status, base)
			checkPatch(t, "u1", v1.PodStatus{}, status)
		})
	}
	patch, unchanged, err := podstatus.StatusPatch("u1", base, *base.DeepCopy())
	require.NoError(t, err)
	assert.True(t, unchanged)
	assert.Equal(t, `{"metadata":{"uid":"u1"}}`, string(patch))
}

// Statuses made at random from a few parts, in pairs: the patch from one
// to the other is the kubelet's.
func TestStatusPatchOfRandomStatuses(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	types := []v1.PodConditionType{"Ready", "Initialized", "ContainersReady", "PodScheduled", "example.com/gate"}
	some := func() v1.PodStatus {
		var s v1.PodStatus
		s.Phase = []v1.PodPhase{"", v1.PodPending, v1.PodRunning, v1.PodFailed}[r.IntN(4)]
		for _, i := range r.Perm(len(types))[:r.IntN(len(types)+1)] {
			s.Conditions = append(s.Conditions, cond(types[i], []v1.ConditionStatus{"True", "False"}[r.IntN(2)], time.Duration(r.IntN(2))*time.Second))
		}
		for _, i := range r.Perm(3)[:r.IntN(4)] {
			s.PodIPs = append(s.PodIPs, v1.PodIP{IP: fmt.Sprintf("10.0.0.%d", i)})
		}
		if r.IntN(2) == 0 {
			s.ContainerStatuses = []v1.ContainerStatus{running("web", r.IntN(2) == 0), exited("db", int32(r.IntN(2)))}
		}
		return s
	}
	for i := 0; i < 300; i++ {
		checkPatch(t, "u1", some(), some())
	}
}

// checkPatch: StatusPatch gives the kubelet's patch, and the API server
// applying it to a pod with old gives status.
func checkPatch(t *testing.T, uid types.UID, old, status v1.PodStatus) {
	t.Helper()
	patch, unchanged, err := podstatus.StatusPatch(uid, old, status)
	require.NoError(t, err)
	want := kubeletPatch(t, uid, old, status)
	require.JSONEq(t, string(want), string(patch))
	assert.Equal(t, fmt.Sprintf(`{"metadata":{"uid":%q}}`, uid) == string(want), unchanged)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: uid}, Status: old}
	got := applyPatch(t, pod, patch)
	wantJSON, _ := json.Marshal(status)
	gotJSON, _ := json.Marshal(got.Status)
	assert.JSONEq(t, string(wantJSON), string(gotJSON))
}

func ptr[T any](v T) *T { return &v }
