package eviction

import (
	"time"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// Observation is one signal's reading: Available of Capacity (bytes,
// inodes or process IDs) at Time.
type Observation struct {
	Available int64
	Capacity  int64
	// Time is when the figures were read; a threshold only evicts again
	// once its signal has a newer reading (the kubelet's
	// thresholdsUpdatedStats). Zero: always new.
	Time time.Time
}

// Observations are the node's signals by name.
type Observations map[string]Observation

// ObservationsFromSummary reads the signals from a Summary API response
// as the kubelet's makeSignalObservations does: memory.available from the
// node's memory, allocatableMemory.available from the "pods" system
// container, nodefs.* from node.fs, imagefs.* and containerfs.* from
// node.runtime, pid.available from node.rlimit. A signal whose figures are
// missing is left out.
func ObservationsFromSummary(s *statsapi.Summary) Observations {
	out := Observations{}
	if s == nil {
		return out
	}
	n := &s.Node
	if m := n.Memory; m != nil && m.AvailableBytes != nil && m.WorkingSetBytes != nil {
		out[SignalMemoryAvailable] = Observation{int64(*m.AvailableBytes), int64(*m.AvailableBytes + *m.WorkingSetBytes), m.Time.Time}
	}
	for _, c := range n.SystemContainers {
		if c.Name != statsapi.SystemContainerPods {
			continue
		}
		if m := c.Memory; m != nil && m.AvailableBytes != nil && m.WorkingSetBytes != nil {
			out[SignalAllocatableMemoryAvailable] = Observation{int64(*m.AvailableBytes), int64(*m.AvailableBytes + *m.WorkingSetBytes), m.Time.Time}
		}
		break
	}
	fs := func(fs *statsapi.FsStats, bytes, inodes string) {
		if fs == nil {
			return
		}
		if fs.AvailableBytes != nil && fs.CapacityBytes != nil {
			out[bytes] = Observation{int64(*fs.AvailableBytes), int64(*fs.CapacityBytes), fs.Time.Time}
		}
		if fs.InodesFree != nil && fs.Inodes != nil {
			out[inodes] = Observation{int64(*fs.InodesFree), int64(*fs.Inodes), fs.Time.Time}
		}
	}
	fs(n.Fs, SignalNodeFsAvailable, SignalNodeFsInodesFree)
	if n.Runtime != nil {
		fs(n.Runtime.ImageFs, SignalImageFsAvailable, SignalImageFsInodesFree)
		fs(n.Runtime.ContainerFs, SignalContainerFsAvailable, SignalContainerFsInodesFree)
	}
	if r := n.Rlimit; r != nil && r.NumOfRunningProcesses != nil && r.MaxPID != nil {
		out[SignalPIDAvailable] = Observation{*r.MaxPID - *r.NumOfRunningProcesses, *r.MaxPID, r.Time.Time}
	}
	return out
}
