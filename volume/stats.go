package volume

import (
	"errors"
	"fmt"
	"io/fs"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodekit-dev/nodekit/internal/fsstats"
)

// PodVolumeStats measures pod's volumes that live in its directory, as the
// kubelet's volume stats calculator does with the plugins that measure by
// du (its MetricsDu): emptyDir (on disk or tmpfs), configMap, secret,
// downwardAPI and projected; hostPath and the types this node does not
// serve report nothing. Each one's UsedBytes and InodesUsed are the
// du-style usage of <root-dir>/pods/<uid>/volumes/<plugin>/<name>
// (allocated blocks, hard links once, symlinks such as the ..data of an
// API-backed volume not followed), its capacity, available bytes and
// inodes the statfs figures of the filesystem there (the tmpfs of a
// memory-backed emptyDir). A volume not set up yet (no directory) is left
// out; one that cannot be measured is left out too, and named in the
// error. The stats are in the order of pod.Spec.Volumes.
func (m *Manager) PodVolumeStats(pod *v1.Pod) ([]statsapi.VolumeStats, error) {
	var out []statsapi.VolumeStats
	var errs []error
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		p := m.pluginFor(vol)
		if p == nil || !measured(vol) {
			continue
		}
		st, err := m.measure(pod, p, vol)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			errs = append(errs, fmt.Errorf("volumes[%s]: %w", vol.Name, err))
		default:
			out = append(out, statsapi.VolumeStats{Name: vol.Name, FsStats: *st})
		}
	}
	return out, errors.Join(errs...)
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
