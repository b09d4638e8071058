package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodekit-dev/nodekit/internal/fsstats"
)

// StatsPlugin is a Plugin that measures its volumes itself (the kubelet's
// MetricsProvider of the plugin): persistentVolumeClaim volumes by statfs
// of a local PV's mount or by the CSI driver's NodeGetVolumeStats. A
// volume it cannot measure (a hostPath PV, a driver without
// GET_VOLUME_STATS) is errors.ErrUnsupported and left out.
type StatsPlugin interface {
	VolumeStats(pod *v1.Pod, vol *v1.Volume, vd VolumeDir) (*statsapi.FsStats, error)
}

// PodVolumeStats measures pod's volumes, as the kubelet's volume stats
// calculator does. The plugins that the kubelet measures by du (its
// MetricsDu) are measured so: emptyDir (on disk or tmpfs), configMap,
// secret, downwardAPI and projected. Each one's UsedBytes and InodesUsed
// are the du-style usage of <root-dir>/pods/<uid>/volumes/<plugin>/<name>
// (allocated blocks, hard links once, symlinks such as the ..data of an
// API-backed volume not followed), its capacity, available bytes and
// inodes the statfs figures of the filesystem there (the tmpfs of a
// memory-backed emptyDir). A StatsPlugin's volumes are measured by it and
// carry their claim (PVCRef). hostPath and the types this node does not
// serve report nothing. A volume not set up yet (no directory) is left
// out; one that cannot be measured is left out too, and named in the
// error. The stats are in the order of pod.Spec.Volumes.
func (m *Manager) PodVolumeStats(pod *v1.Pod) ([]statsapi.VolumeStats, error) {
	return m.podVolumeStats(pod, false)
}

// PodPersistentVolumeStats is PodVolumeStats of pod's persistentVolumeClaim
// volumes alone (no du of the others): what kubelet_volume_stats_* report.
func (m *Manager) PodPersistentVolumeStats(pod *v1.Pod) ([]statsapi.VolumeStats, error) {
	return m.podVolumeStats(pod, true)
}

func (m *Manager) podVolumeStats(pod *v1.Pod, claimsOnly bool) ([]statsapi.VolumeStats, error) {
	var out []statsapi.VolumeStats
	var errs []error
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		p := m.pluginFor(vol)
		sp, self := p.(StatsPlugin)
		claim := ClaimName(pod, vol)
		if p == nil || claimsOnly && claim == "" || !self && !measured(vol) {
			continue
		}
		var st *statsapi.FsStats
		var err error
		if self {
			st, err = m.measureBy(sp, pod, p, vol)
		} else {
			st, err = m.measure(pod, p, vol)
		}
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, errors.ErrUnsupported):
		case err != nil:
			errs = append(errs, fmt.Errorf("volumes[%s]: %w", vol.Name, err))
		default:
			vs := statsapi.VolumeStats{Name: vol.Name, FsStats: *st}
			if claim != "" {
				vs.PVCRef = &statsapi.PVCReference{Name: claim, Namespace: pod.Namespace}
			}
			out = append(out, vs)
		}
	}
	return out, errors.Join(errs...)
}

func (m *Manager) measureBy(sp StatsPlugin, pod *v1.Pod, p Plugin, vol *v1.Volume) (*statsapi.FsStats, error) {
	dir, err := m.layout.PodVolumeDir(pod.UID, p.Name(), vol.Name)
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(m.layout.Root(), dir)
	if err != nil {
		return nil, err
	}
	return sp.VolumeStats(pod, vol, VolumeDir{root: m.layout.Root(), rel: rel})
}

func (m *Manager) measure(pod *v1.Pod, p Plugin, vol *v1.Volume) (*statsapi.FsStats, error) {
	dir, err := m.layout.PodVolumeDir(pod.UID, p.Name(), vol.Name)
	if err != nil {
		return nil, err
	}
	now := metav1.Now()
	u, err := fsstats.DiskUsage(dir)
	if err != nil {
		return nil, err
	}
	sf, err := fsstats.Statfs(dir)
	if err != nil {
		return nil, err
	}
	return &statsapi.FsStats{Time: now, AvailableBytes: &sf.Available, CapacityBytes: &sf.Capacity, UsedBytes: &u.Bytes,
		Inodes: &sf.Inodes, InodesFree: &sf.InodesFree, InodesUsed: &u.Inodes}, nil
}

// measured: the kubelet measures the volume type by du.
func measured(vol *v1.Volume) bool {
	return vol.EmptyDir != nil || vol.ConfigMap != nil || vol.Secret != nil || vol.DownwardAPI != nil || vol.Projected != nil
}
