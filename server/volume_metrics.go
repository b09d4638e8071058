package server

import (
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// PersistentVolumeStatsProvider measures a pod's persistentVolumeClaim
// volumes (each with its PVCRef); *volume.Manager implements it.
type PersistentVolumeStatsProvider interface {
	PodPersistentVolumeStats(pod *v1.Pod) ([]statsapi.VolumeStats, error)
}

// The kubelet's volume stats metrics (pkg/kubelet/metrics/collectors/
// volume_stats.go): names, help texts and labels as there.
var (
	pvcLabels              = []string{"namespace", "persistentvolumeclaim"}
	volumeCapacityBytes    = prometheus.NewDesc("kubelet_volume_stats_capacity_bytes", "Capacity in bytes of the volume", pvcLabels, nil)
	volumeAvailableBytes   = prometheus.NewDesc("kubelet_volume_stats_available_bytes", "Number of available bytes in the volume", pvcLabels, nil)
	volumeUsedBytes        = prometheus.NewDesc("kubelet_volume_stats_used_bytes", "Number of used bytes in the volume", pvcLabels, nil)
	volumeInodes           = prometheus.NewDesc("kubelet_volume_stats_inodes", "Maximum number of inodes in the volume", pvcLabels, nil)
	volumeInodesFree       = prometheus.NewDesc("kubelet_volume_stats_inodes_free", "Number of free inodes in the volume", pvcLabels, nil)
	volumeInodesUsed       = prometheus.NewDesc("kubelet_volume_stats_inodes_used", "Number of used inodes in the volume", pvcLabels, nil)
	volumeStatsDescriptors = []*prometheus.Desc{volumeCapacityBytes, volumeAvailableBytes, volumeUsedBytes,
		volumeInodes, volumeInodesFree, volumeInodesUsed}
)

// NewVolumeStatsMetrics returns the kubelet's kubelet_volume_stats_*
// collector (served on /metrics): for each claim a pod of pods uses, once
// however many pods use it, its volume's capacity, available and used
// bytes and its inodes, free and used, measured at each scrape. A claim
// whose volume reports nothing (a hostPath PV, a CSI driver without
// GET_VOLUME_STATS) or lacks a figure gives no sample of it; the kubelet
// reports 0 for a missing figure, which an alert would take for a full
// volume.
func NewVolumeStatsMetrics(pods PodLister, volumes PersistentVolumeStatsProvider) prometheus.Collector {
	return &volumeStatsMetrics{pods: pods, volumes: volumes}
}

type volumeStatsMetrics struct {
	pods    PodLister
	volumes PersistentVolumeStatsProvider
}

// Describe implements prometheus.Collector.
func (*volumeStatsMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range volumeStatsDescriptors {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *volumeStatsMetrics) Collect(ch chan<- prometheus.Metric) {
	seen := map[statsapi.PVCReference]bool{}
	for _, pod := range m.pods.Pods() {
		if !usesClaims(&pod) {
			continue
		}
		stats, _ := m.volumes.PodPersistentVolumeStats(&pod)
		for _, vs := range stats {
			if vs.PVCRef == nil || seen[*vs.PVCRef] {
				continue
			}
			seen[*vs.PVCRef] = true
			for i, v := range []*uint64{vs.CapacityBytes, vs.AvailableBytes, vs.UsedBytes, vs.Inodes, vs.InodesFree, vs.InodesUsed} {
				if v != nil {
					ch <- prometheus.MustNewConstMetric(volumeStatsDescriptors[i], prometheus.GaugeValue, float64(*v),
						vs.PVCRef.Namespace, vs.PVCRef.Name)
				}
			}
		}
	}
}

func usesClaims(pod *v1.Pod) bool {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].PersistentVolumeClaim != nil || pod.Spec.Volumes[i].Ephemeral != nil {
			return true
		}
	}
	return false
}
