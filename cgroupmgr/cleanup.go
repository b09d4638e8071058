package cgroupmgr

import (
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// CleanupResult says what CleanupOrphans did.
type CleanupResult struct {
	// Removed are the UIDs whose pod cgroups were removed.
	Removed []types.UID
	// Busy are orphaned pod cgroups left in place because processes remain.
	Busy []*BusyError
}

// CleanupOrphans is the kubelet's housekeeping: every pod cgroup under the
// QoS cgroups whose UID is not in activeUIDs is removed once it holds no
// processes. A cgroup that still has processes is reported in Busy (and in
// the returned error, which errors.As finds as *BusyError), never removed.
func (m *Manager) CleanupOrphans(activeUIDs map[types.UID]bool) (CleanupResult, error) {
	var res CleanupResult
	var errs []error
	for _, qos := range []v1.PodQOSClass{v1.PodQOSGuaranteed, v1.PodQOSBurstable, v1.PodQOSBestEffort} {
		parent := m.Path(m.QOSCgroupName(qos))
		kids, err := m.fs.children(parent)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, k := range kids {
			uid := m.podUIDFromCgroup(k)
			if uid == "" || activeUIDs[uid] {
				continue
			}
			p := parent + "/" + k
			if parent == "/" {
				p = "/" + k
			}
			pids, err := m.fs.pids(p)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if len(pids) > 0 {
				be := &BusyError{Path: p, PIDs: pids}
				res.Busy = append(res.Busy, be)
				errs = append(errs, be)
				continue
			}
			if err := m.destroyTree(p); err != nil {
				errs = append(errs, err)
				continue
			}
			res.Removed = append(res.Removed, uid)
		}
	}
	return res, errors.Join(errs...)
}
