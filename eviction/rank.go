package eviction

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// FsLayout is where the runtime keeps images and containers' writable
// layers relative to the node's filesystem (--root-dir); it decides which
// usage each disk signal ranks pods by and what node-level reclaim does.
type FsLayout int

const (
	// SharedFs: one filesystem for everything (no dedicated imagefs).
	SharedFs FsLayout = iota
	// DedicatedImageFs: images and writable layers on their own filesystem.
	DedicatedImageFs
	// SplitImageFs: images on their own filesystem, writable layers on the
	// node's (the kubelet's KubeletSeparateDiskGC).
	SplitImageFs
)

func (l FsLayout) String() string {
	switch l {
	case DedicatedImageFs:
		return "DedicatedImageFs"
	case SplitImageFs:
		return "SplitImageFs"
	}
	return "SharedFs"
}

// fsStats are the usages a disk signal measures (the kubelet's fsStatsType).
type fsStats uint8

const (
	fsRoot   fsStats = 1 << iota // containers' writable layers
	fsLogs                       // containers' logs
	fsVolume                     // local volumes: emptyDir on disk, hostPath, configMap, gitRepo
)

// measure is the kubelet's buildSignalToRankFunc: which usages rank pods
// for a disk signal under a layout.
func (l FsLayout) measure(signal string) fsStats {
	switch l {
	case DedicatedImageFs:
		switch signal {
		case SignalNodeFsAvailable, SignalNodeFsInodesFree:
			return fsLogs | fsVolume
		}
		return fsRoot
	case SplitImageFs:
		switch signal {
		case SignalImageFsAvailable, SignalImageFsInodesFree:
			return 0 // images only, which no pod owns
		}
		return fsLogs | fsVolume | fsRoot
	}
	return fsRoot | fsLogs | fsVolume
}

// reclaim is the kubelet's buildSignalToNodeReclaimFuncs: whether node-level
// reclaim of a disk signal deletes unused containers and images.
func (l FsLayout) reclaim(signal string) (containers, images bool) {
	if signalResource[signal] != v1.ResourceEphemeralStorage && signalResource[signal] != ResourceInodes {
		return false, false
	}
	switch l {
	case DedicatedImageFs:
		if signal == SignalNodeFsAvailable || signal == SignalNodeFsInodesFree {
			return false, false
		}
	case SplitImageFs:
		if signal == SignalImageFsAvailable || signal == SignalImageFsInodesFree {
			return false, true
		}
		return true, false
	}
	return true, true
}

// PodStats finds a pod's stats in a summary by UID.
type PodStats map[string]*statsapi.PodStats

// PodStatsFromSummary indexes the summary's pods by UID.
func PodStatsFromSummary(s *statsapi.Summary) PodStats {
	out := PodStats{}
	if s == nil {
		return out
	}
	for i := range s.Pods {
		out[s.Pods[i].PodRef.UID] = &s.Pods[i]
	}
	return out
}

func (p PodStats) of(pod *v1.Pod) *statsapi.PodStats { return p[string(pod.UID)] }

// rankKey is one pod's place in a ranking, computed once per pod (the
// kubelet recomputes it in every comparison).
type rankKey struct {
	pod      *v1.Pod
	index    int   // in the input: equal pods keep their order
	found    bool  // stats found; pods without are evicted first
	exceeds  bool  // usage above request
	priority int32 // lower first
	usage    int64 // the more the sooner: usage above request, or processes
}

// Rank orders pods for eviction to reclaim signal as the kubelet does:
//   - memory (memory.available, allocatableMemory.available): pods whose
//     working set exceeds their memory request first, then by priority
//     (lowest first), then by working set above request (largest first);
//   - disk (nodefs.*, imagefs.*, containerfs.*): pods whose usage of the
//     resource (bytes or inodes: writable layers, logs and local volumes, as
//     layout measures them) exceeds their request first, then priority, then
//     usage above their ephemeral-storage request;
//   - pid.available: priority, then process count (largest first).
//
// Pods without stats come first. Equal pods keep their order. pods is
// sorted in place.
func Rank(signal string, pods []*v1.Pod, stats PodStats, layout FsLayout) {
	keys := make([]rankKey, len(pods))
	for i, pod := range pods {
		keys[i] = makeKey(signal, pod, stats.of(pod), layout)
		keys[i].index = i
	}
	cmp := cmpExceeds
	if signal == SignalPIDAvailable {
		cmp = cmpPID
	}
	// A stable sort by the index last: pdqsort is much faster than
	// SortStableFunc's insertion and merge passes.
	slices.SortFunc(keys, func(a, b rankKey) int {
		if c := cmp(a, b); c != 0 {
			return c
		}
		return a.index - b.index
	})
	for i := range keys {
		pods[i] = keys[i].pod
	}
}

func makeKey(signal string, pod *v1.Pod, st *statsapi.PodStats, layout FsLayout) rankKey {
	k := rankKey{pod: pod, found: st != nil}
	if pod.Spec.Priority != nil {
		k.priority = *pod.Spec.Priority
	}
	if st == nil {
		return k
	}
	switch res := signalResource[signal]; res {
	case v1.ResourceMemory:
		var ws int64
		if st.Memory != nil && st.Memory.WorkingSetBytes != nil {
			ws = int64(*st.Memory.WorkingSetBytes)
		}
		req := podRequest(pod, v1.ResourceMemory)
		k.exceeds, k.usage = ws > req, ws-req
	case ResourcePIDs:
		if st.ProcessStats != nil && st.ProcessStats.ProcessCount != nil {
			k.usage = int64(*st.ProcessStats.ProcessCount)
		}
	case v1.ResourceEphemeralStorage, ResourceInodes:
		bytes, inodes := podDiskUsage(pod, st, layout.measure(signal))
		use := bytes
		if res == ResourceInodes {
			use = inodes
		}
		// As the kubelet: "exceeds" against the request of the resource
		// itself, the usage above the ephemeral-storage request even for
		// inodes.
		k.exceeds = use > podRequest(pod, res)
		k.usage = use - podRequest(pod, v1.ResourceEphemeralStorage)
	}
	return k
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cmpExceeds is orderedBy(exceedRequests, priority, usage).
func cmpExceeds(a, b rankKey) int {
	if c := cmpBool(!a.found, !b.found); c != 0 {
		return c
	}
	if a.found {
		if c := cmpBool(a.exceeds, b.exceeds); c != 0 {
			return c
		}
	}
	if c := cmpInt(int64(a.priority), int64(b.priority)); c != 0 {
		return c
	}
	if !a.found {
		return 0
	}
	return cmpInt(b.usage, a.usage)
}

// cmpPID is orderedBy(priority, process).
func cmpPID(a, b rankKey) int {
	if c := cmpInt(int64(a.priority), int64(b.priority)); c != 0 {
		return c
	}
	if c := cmpBool(!a.found, !b.found); c != 0 || !a.found {
		return c
	}
	return cmpInt(b.usage, a.usage)
}

// podDiskUsage is the kubelet's podDiskUsage: bytes and inodes of the
// containers' writable layers and logs, and of the pod's local volumes.
func podDiskUsage(pod *v1.Pod, st *statsapi.PodStats, measure fsStats) (bytes, inodes int64) {
	add := func(fs *statsapi.FsStats) {
		if fs == nil {
			return
		}
		if fs.UsedBytes != nil {
			bytes += int64(*fs.UsedBytes)
		}
		if fs.InodesUsed != nil {
			inodes += int64(*fs.InodesUsed)
		}
	}
	for i := range st.Containers {
		if measure&fsRoot != 0 {
			add(st.Containers[i].Rootfs)
		}
		if measure&fsLogs != 0 {
			add(st.Containers[i].Logs)
		}
	}
	if measure&fsVolume != 0 {
		for i := range pod.Spec.Volumes {
			vol := &pod.Spec.Volumes[i]
			if !localVolume(vol) {
				continue
			}
			for j := range st.VolumeStats {
				if st.VolumeStats[j].Name == vol.Name {
					add(&st.VolumeStats[j].FsStats)
					break
				}
			}
		}
	}
	return bytes, inodes
}

// localVolume is the kubelet's localVolumeNames test: hostPath, or a local
// ephemeral volume (gitRepo, emptyDir on disk, configMap).
func localVolume(v *v1.Volume) bool {
	return v.HostPath != nil || v.GitRepo != nil || v.ConfigMap != nil ||
		(v.EmptyDir != nil && v.EmptyDir.Medium == v1.StorageMediumDefault)
}
