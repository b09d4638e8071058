package gc

import (
	"cmp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/podpath"
)

// The kubelet's container GC defaults.
const (
	// DefaultContainerGCPeriod is how often the kubelet collects containers.
	DefaultContainerGCPeriod = time.Minute
	// DefaultMaxPerPodContainer is --maximum-dead-containers-per-container.
	DefaultMaxPerPodContainer = 1
	// DefaultMaxContainers is --maximum-dead-containers: no limit.
	DefaultMaxContainers = -1
)

// ContainerPolicy is the kubelet's container GC policy
// (kubecontainer.GCPolicy).
type ContainerPolicy struct {
	// MinAge: a dead container created less than MinAge ago is kept
	// (--minimum-container-ttl-duration, default 0).
	MinAge time.Duration
	// MaxPerPodContainer is how many dead instances of one container of a
	// pod are kept, the newest (--maximum-dead-containers-per-container,
	// default 1); negative for no limit.
	MaxPerPodContainer int
	// MaxContainers is how many dead containers the node keeps in all
	// (--maximum-dead-containers, default -1: no limit).
	MaxContainers int
}

// DefaultContainerPolicy is the kubelet's: MinAge 0, MaxPerPodContainer 1,
// MaxContainers -1.
func DefaultContainerPolicy() ContainerPolicy {
	return ContainerPolicy{MaxPerPodContainer: DefaultMaxPerPodContainer, MaxContainers: DefaultMaxContainers}
}

// ContainerInfo is a container as the container GC decides on it (the
// kubelet's containerGCInfo).
type ContainerInfo struct {
	ID string
	// PodUID and Name (the container's name in its pod) make the
	// kubelet's evict unit.
	PodUID    types.UID
	Name      string
	SandboxID string
	State     kc.ContainerState
	CreatedAt time.Time
}

// SandboxInfo is a pod sandbox as the container GC decides on it (the
// kubelet's sandboxGCInfo).
type SandboxInfo struct {
	ID        string
	PodUID    types.UID
	Ready     bool
	CreatedAt time.Time
}

// evictUnit is the kubelet's evictUnit: the dead instances of one
// container of one pod.
type evictUnit struct {
	uid  types.UID
	name string
}

// newestFirst orders by creation, newest first; the ID breaks ties so
// that decisions do not depend on list order.
func newestFirst(a, b ContainerInfo) int {
	if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// SelectContainers is the kubelet's evictContainers as a pure function: the
// containers to remove, in the order to remove them.
//
//   - Evictable: not running (created, exited or unknown) and created at
//     least p.MinAge before now.
//   - A pod for which removable says true (deleted, or terminated when
//     the caller evicts those too; nil: none) loses all its evictable
//     containers, whatever the limits.
//   - Of the rest, each (pod UID, container name) keeps its
//     p.MaxPerPodContainer newest (no limit when negative).
//   - Then, if more than p.MaxContainers remain (no limit when negative),
//     each unit keeps an equal share, MaxContainers divided by the number
//     of units but at least 1, and if that is still too many, the oldest
//     go whichever unit they are in.
func SelectContainers(p ContainerPolicy, now time.Time, containers []ContainerInfo, removable func(types.UID) bool) []ContainerInfo {
	newest := now.Add(-p.MinAge)
	units := map[evictUnit][]ContainerInfo{}
	for _, c := range containers {
		if c.State == kc.ContainerStateRunning || c.CreatedAt.After(newest) {
			continue
		}
		k := evictUnit{c.PodUID, c.Name}
		units[k] = append(units[k], c)
	}
	if len(units) == 0 {
		return nil
	}
	keys := make([]evictUnit, 0, len(units))
	for k, u := range units {
		keys = append(keys, k)
		slices.SortFunc(u, newestFirst)
	}
	slices.SortFunc(keys, func(a, b evictUnit) int {
		if c := cmp.Compare(a.uid, b.uid); c != 0 {
			return c
		}
		return cmp.Compare(a.name, b.name)
	})

	var out []ContainerInfo
	// oldestOf moves the instances of u past the first keep to out,
	// oldest first, and returns those kept.
	oldestOf := func(u []ContainerInfo, keep int) []ContainerInfo {
		for i := len(u) - 1; i >= keep; i-- {
			out = append(out, u[i])
		}
		return u[:keep]
	}
	live := keys[:0:0]
	for _, k := range keys {
		if removable != nil && removable(k.uid) {
			oldestOf(units[k], 0)
			continue
		}
		live = append(live, k)
	}
	keepPerUnit := func(n int) {
		for _, k := range live {
			if u := units[k]; len(u) > n {
				units[k] = oldestOf(u, n)
			}
		}
	}
	count := func() (n int) {
		for _, k := range live {
			n += len(units[k])
		}
		return n
	}
	if p.MaxPerPodContainer >= 0 {
		keepPerUnit(p.MaxPerPodContainer)
	}
	total := count()
	if p.MaxContainers < 0 || total <= p.MaxContainers {
		return out
	}
	// Leave each unit an equal share (at least one), then, if that is
	// still too many, remove the oldest wherever they are.
	keepPerUnit(max(p.MaxContainers/len(live), 1))
	if total = count(); total <= p.MaxContainers {
		return out
	}
	flat := make([]ContainerInfo, 0, total)
	for _, k := range live {
		flat = append(flat, units[k]...)
	}
	slices.SortFunc(flat, newestFirst)
	oldestOf(flat, p.MaxContainers)
	return out
}

// SelectSandboxes is the kubelet's evictSandboxes as a pure function: the
// sandboxes to remove, oldest first within each pod. A sandbox is active
// when it is ready or a container (of containers, whatever its state)
// is in it; only inactive ones are removed. A pod keeps its newest sandbox,
// active or not, unless removable says true for it (nil: for none); then
// every inactive one goes.
func SelectSandboxes(sandboxes []SandboxInfo, containers []ContainerInfo, removable func(types.UID) bool) []SandboxInfo {
	occupied := make(map[string]bool, len(containers))
	for _, c := range containers {
		occupied[c.SandboxID] = true
	}
	byPod := map[types.UID][]SandboxInfo{}
	for _, s := range sandboxes {
		byPod[s.PodUID] = append(byPod[s.PodUID], s)
	}
	uids := make([]types.UID, 0, len(byPod))
	for uid := range byPod {
		uids = append(uids, uid)
	}
	slices.Sort(uids)
	var out []SandboxInfo
	for _, uid := range uids {
		sbs := byPod[uid]
		slices.SortFunc(sbs, func(a, b SandboxInfo) int {
			if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
				return c
			}
			return cmp.Compare(a.ID, b.ID)
		})
		keep := 1
		if removable != nil && removable(uid) {
			keep = 0
		}
		for i := len(sbs) - 1; i >= keep; i-- {
			if s := sbs[i]; !s.Ready && !occupied[s.ID] {
				out = append(out, s)
			}
		}
	}
	return out
}

// SelectPodLogDirs is the kubelet's evictPodLogsDirectories as a pure
// function: of the entries of the pod logs directory, those to remove.
// Only names podpath makes (<namespace>_<name>_<uid>) are considered; one
// goes when removable says its pod's content may go (nil: none), unless the
// runtime still has a sandbox of that pod (inRuntime), whoever's it is.
func SelectPodLogDirs(dirs []string, inRuntime map[types.UID]bool, removable func(types.UID) bool) []string {
	if removable == nil {
		return nil
	}
	var out []string
	for _, d := range dirs {
		_, _, uid, ok := podpath.ParsePodLogsDirName(d)
		if ok && !inRuntime[uid] && removable(uid) {
			out = append(out, d)
		}
	}
	return out
}
