package server_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/server"
)

// claimStats measures by pod UID.
type claimStats map[types.UID][]statsapi.VolumeStats

func (c claimStats) PodPersistentVolumeStats(pod *v1.Pod) ([]statsapi.VolumeStats, error) {
	return c[pod.UID], nil
}

func claimPod(uid, claim string) v1.Pod {
	return v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "db", UID: types.UID(uid)}, Spec: v1.PodSpec{Volumes: []v1.Volume{
		{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}}}
}

// The kubelet's volume stats collector: one series set per claim however
// many pods use it; a figure the volume does not report gives no sample
// (the kubelet's would be 0).
func TestVolumeStatsMetrics(t *testing.T) {
	full := statsapi.VolumeStats{Name: "data", PVCRef: &statsapi.PVCReference{Name: "pg", Namespace: "db"},
		FsStats: statsapi.FsStats{CapacityBytes: ptr.To[uint64](1 << 30), AvailableBytes: ptr.To[uint64](3 << 28),
			UsedBytes: ptr.To[uint64](1 << 28), Inodes: ptr.To[uint64](1000), InodesFree: ptr.To[uint64](900), InodesUsed: ptr.To[uint64](100)}}
	bytesOnly := statsapi.VolumeStats{Name: "data", PVCRef: &statsapi.PVCReference{Name: "cache", Namespace: "db"},
		FsStats: statsapi.FsStats{CapacityBytes: ptr.To[uint64](2048), AvailableBytes: ptr.To[uint64](1024), UsedBytes: ptr.To[uint64](1024)}}
	c := server.NewVolumeStatsMetrics(pods{claimPod("a", "pg"), claimPod("b", "pg"), claimPod("c", "cache"), claimPod("d", "host"),
		{ObjectMeta: metav1.ObjectMeta{Name: "no-claims", UID: "e"}}},
		claimStats{"a": {full}, "b": {full}, "c": {bytesOnly}, "e": {full}})
	want := `# HELP kubelet_volume_stats_available_bytes Number of available bytes in the volume
# TYPE kubelet_volume_stats_available_bytes gauge
kubelet_volume_stats_available_bytes{namespace="db",persistentvolumeclaim="cache"} 1024
kubelet_volume_stats_available_bytes{namespace="db",persistentvolumeclaim="pg"} 8.05306368e+08
# HELP kubelet_volume_stats_capacity_bytes Capacity in bytes of the volume
# TYPE kubelet_volume_stats_capacity_bytes gauge
kubelet_volume_stats_capacity_bytes{namespace="db",persistentvolumeclaim="cache"} 2048
kubelet_volume_stats_capacity_bytes{namespace="db",persistentvolumeclaim="pg"} 1.073741824e+09
# HELP kubelet_volume_stats_inodes Maximum number of inodes in the volume
# TYPE kubelet_volume_stats_inodes gauge
kubelet_volume_stats_inodes{namespace="db",persistentvolumeclaim="pg"} 1000
# HELP kubelet_volume_stats_inodes_free Number of free inodes in the volume
# TYPE kubelet_volume_stats_inodes_free gauge
kubelet_volume_stats_inodes_free{namespace="db",persistentvolumeclaim="pg"} 900
# HELP kubelet_volume_stats_inodes_used Number of used inodes in the volume
# TYPE kubelet_volume_stats_inodes_used gauge
kubelet_volume_stats_inodes_used{namespace="db",persistentvolumeclaim="pg"} 100
# HELP kubelet_volume_stats_used_bytes Number of used bytes in the volume
# TYPE kubelet_volume_stats_used_bytes gauge
kubelet_volume_stats_used_bytes{namespace="db",persistentvolumeclaim="cache"} 1024
kubelet_volume_stats_used_bytes{namespace="db",persistentvolumeclaim="pg"} 2.68435456e+08
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want)))
	problems, err := testutil.CollectAndLint(c)
	require.NoError(t, err)
	require.Empty(t, problems)
}
