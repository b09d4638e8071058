package fake

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ContainerStats returns what SetContainerStats set, or zero usage.
func (r *Runtime) ContainerStats(ctx context.Context, req *runtimeapi.ContainerStatsRequest) (*runtimeapi.ContainerStatsResponse, error) {
	if err := r.enter(ctx, mContainerStats); err != nil {
		return nil, err
	}
	now := nanos(r.clock.Now())
	r.mu.RLock()
	defer r.mu.RUnlock()
	c, err := r.findContainerLocked(req.GetContainerId())
	if err != nil {
		return nil, wrapLookup(err, "failed to find container")
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING && c.stats == nil {
		// containerd asks the (absent) task for metrics.
		return nil, status.Error(codes.Unknown, "unexpected metrics response: []")
	}
	return &runtimeapi.ContainerStatsResponse{Stats: r.containerStats(c, now)}, nil
}

// ListContainerStats lists container stats; the ID filters take unique
// prefixes like ListContainers.
func (r *Runtime) ListContainerStats(ctx context.Context, req *runtimeapi.ListContainerStatsRequest) (*runtimeapi.ListContainerStatsResponse, error) {
	if err := r.enter(ctx, mListContainerStats); err != nil {
		return nil, err
	}
	now := nanos(r.clock.Now())
	r.mu.RLock()
	defer r.mu.RUnlock()
	f := req.GetFilter()
	cf := &runtimeapi.ContainerFilter{Id: f.GetId(), PodSandboxId: f.GetPodSandboxId(), LabelSelector: f.GetLabelSelector()}
	out := []*runtimeapi.ContainerStats{}
	for _, it := range r.filterContainersLocked(cf) {
		out = append(out, r.containerStats(r.st.containers[it.Id], now))
	}
	return &runtimeapi.ListContainerStatsResponse{Stats: out}, nil
}

// PodSandboxStats returns what SetPodSandboxStats set, or zero usage. Like
// containerd, a sandbox that is not ready has no stats (Unavailable).
func (r *Runtime) PodSandboxStats(ctx context.Context, req *runtimeapi.PodSandboxStatsRequest) (*runtimeapi.PodSandboxStatsResponse, error) {
	if err := r.enter(ctx, mPodSandboxStats); err != nil {
		return nil, err
	}
	now := nanos(r.clock.Now())
	r.mu.RLock()
	defer r.mu.RUnlock()
	sb, err := r.findSandboxLocked(req.GetPodSandboxId())
	if err != nil {
		return nil, wrapLookup(err, "an error occurred when trying to find sandbox %s", req.GetPodSandboxId())
	}
	if !sb.ready {
		return nil, status.Errorf(codes.Unavailable,
			"failed to get pod sandbox stats since sandbox container %q is not in ready state", sb.id)
	}
	return &runtimeapi.PodSandboxStatsResponse{Stats: r.sandboxStats(sb, now)}, nil
}

// ListPodSandboxStats lists the stats of ready sandboxes.
func (r *Runtime) ListPodSandboxStats(ctx context.Context, req *runtimeapi.ListPodSandboxStatsRequest) (*runtimeapi.ListPodSandboxStatsResponse, error) {
	if err := r.enter(ctx, mListPodSandboxStats); err != nil {
		return nil, err
	}
	now := nanos(r.clock.Now())
	r.mu.RLock()
	defer r.mu.RUnlock()
	f := req.GetFilter()
	id := f.GetId()
	if sb, err := r.findSandboxLocked(id); err == nil {
		id = sb.id
	}
	out := []*runtimeapi.PodSandboxStats{}
	for _, sb := range r.st.sandboxOrder {
		if !sb.ready || (id != "" && sb.id != id) || !matchLabels(f.GetLabelSelector(), sb.cfg.GetLabels()) {
			continue
		}
		out = append(out, r.sandboxStats(sb, now))
	}
	return &runtimeapi.ListPodSandboxStatsResponse{Stats: out}, nil
}

// SetContainerStats fixes the stats reported for a container; missing
// Attributes are filled in. nil restores the zero-usage default.
func (r *Runtime) SetContainerStats(containerID string, s *runtimeapi.ContainerStats) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.findContainerLocked(containerID)
	if err != nil {
		return fmt.Errorf("container %q: %w", containerID, err)
	}
	if s != nil {
		s = proto.Clone(s).(*runtimeapi.ContainerStats)
		if s.Attributes == nil {
			s.Attributes = containerAttributes(c)
		}
	}
	c.stats = s
	return nil
}

// SetPodSandboxStats fixes the stats reported for a sandbox; missing
// Attributes are filled in. nil restores the zero-usage default.
func (r *Runtime) SetPodSandboxStats(sandboxID string, s *runtimeapi.PodSandboxStats) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	sb, err := r.findSandboxLocked(sandboxID)
	if err != nil {
		return fmt.Errorf("sandbox %q: %w", sandboxID, err)
	}
	if s != nil {
		s = proto.Clone(s).(*runtimeapi.PodSandboxStats)
		if s.Attributes == nil {
			s.Attributes = sandboxAttributes(sb)
		}
	}
	sb.stats = s
	return nil
}

func containerAttributes(c *container) *runtimeapi.ContainerAttributes {
	return &runtimeapi.ContainerAttributes{
		Id:          c.id,
		Metadata:    c.cfg.GetMetadata(),
		Labels:      c.cfg.GetLabels(),
		Annotations: c.cfg.GetAnnotations(),
	}
}

func sandboxAttributes(sb *sandbox) *runtimeapi.PodSandboxAttributes {
	return &runtimeapi.PodSandboxAttributes{
		Id:          sb.id,
		Metadata:    sb.cfg.GetMetadata(),
		Labels:      sb.cfg.GetLabels(),
		Annotations: sb.cfg.GetAnnotations(),
	}
}

func zero() *runtimeapi.UInt64Value { return &runtimeapi.UInt64Value{} }

func (r *Runtime) containerStats(c *container, now int64) *runtimeapi.ContainerStats {
	if c.stats != nil {
		return c.stats
	}
	return &runtimeapi.ContainerStats{
		Attributes: containerAttributes(c),
		Cpu:        &runtimeapi.CpuUsage{Timestamp: now, UsageCoreNanoSeconds: zero(), UsageNanoCores: zero()},
		Memory: &runtimeapi.MemoryUsage{Timestamp: now, WorkingSetBytes: zero(), AvailableBytes: zero(),
			UsageBytes: zero(), RssBytes: zero(), PageFaults: zero(), MajorPageFaults: zero()},
		// Writable layers live with the images, as in containerd's snapshotter.
		WritableLayer: &runtimeapi.FilesystemUsage{Timestamp: now,
			FsId:      &runtimeapi.FilesystemIdentifier{Mountpoint: r.imageFs},
			UsedBytes: zero(), InodesUsed: zero()},
	}
}

func (r *Runtime) sandboxStats(sb *sandbox, now int64) *runtimeapi.PodSandboxStats {
	if sb.stats != nil {
		return sb.stats
	}
	cs := make([]*runtimeapi.ContainerStats, 0, len(sb.containers))
	for _, c := range sb.containers {
		if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			cs = append(cs, r.containerStats(c, now))
		}
	}
	return &runtimeapi.PodSandboxStats{
		Attributes: sandboxAttributes(sb),
		Linux: &runtimeapi.LinuxPodSandboxStats{
			Cpu: &runtimeapi.CpuUsage{Timestamp: now, UsageCoreNanoSeconds: zero(), UsageNanoCores: zero()},
			Memory: &runtimeapi.MemoryUsage{Timestamp: now, WorkingSetBytes: zero(), AvailableBytes: zero(),
				UsageBytes: zero(), RssBytes: zero(), PageFaults: zero(), MajorPageFaults: zero()},
			Network: &runtimeapi.NetworkUsage{Timestamp: now, DefaultInterface: &runtimeapi.NetworkInterfaceUsage{
				Name: "eth0", RxBytes: zero(), RxErrors: zero(), TxBytes: zero(), TxErrors: zero()}},
			Process:    &runtimeapi.ProcessUsage{Timestamp: now, ProcessCount: zero()},
			Containers: cs,
		},
	}
}
