package fake

import (
	"context"
	"encoding/json"

	"google.golang.org/protobuf/encoding/protojson"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ContainerStatus returns the container's status.
func (r *Runtime) ContainerStatus(ctx context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	if err := r.enter(ctx, mContainerStatus); err != nil {
		return nil, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	c, err := r.findContainerLocked(req.GetContainerId())
	if err != nil {
		return nil, wrapLookup(err, "an error occurred when try to find container %q", req.GetContainerId())
	}
	resp := &runtimeapi.ContainerStatusResponse{Status: c.status}
	if req.GetVerbose() {
		resp.Info = containerInfo(c)
	}
	return resp, nil
}

// containerInfo is a small version of containerd's verbose "info" JSON.
func containerInfo(c *container) map[string]string {
	cfg, err := protojson.Marshal(c.cfg)
	if err != nil {
		cfg = []byte("null")
	}
	b, err := json.Marshal(map[string]any{
		"sandboxID":   c.sb.id,
		"pid":         0,
		"removing":    false,
		"snapshotKey": c.id,
		"snapshotter": "overlayfs",
		"runtimeType": "io.containerd.runc.v2",
		"config":      json.RawMessage(cfg),
	})
	if err != nil {
		return nil
	}
	return map[string]string{"info": string(b)}
}

// ListContainers lists containers in creation order. The ID and sandbox ID
// filters take exact IDs or unique prefixes, like containerd.
func (r *Runtime) ListContainers(ctx context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	if err := r.enter(ctx, mListContainers); err != nil {
		return nil, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	f := req.GetFilter()
	if f == nil || (f.Id == "" && f.State == nil && f.PodSandboxId == "" && len(f.LabelSelector) == 0) {
		return &runtimeapi.ListContainersResponse{Containers: r.containersLocked()}, nil
	}
	return &runtimeapi.ListContainersResponse{Containers: r.filterContainersLocked(f)}, nil
}

func (r *Runtime) filterContainersLocked(f *runtimeapi.ContainerFilter) []*runtimeapi.Container {
	id, sbID := f.Id, f.PodSandboxId
	candidates := r.st.containerOrder
	if uid, ok := f.LabelSelector[podUIDLabel]; ok {
		candidates = r.st.containersByUID[uid]
	}
	if c, err := r.findContainerLocked(id); err == nil {
		id = c.id
		candidates = []*container{c}
	}
	if sb, err := r.findSandboxLocked(sbID); err == nil {
		sbID = sb.id
		if len(sb.containers) < len(candidates) {
			candidates = sb.containers
		}
	}
	var out []*runtimeapi.Container
	for _, c := range candidates {
		it := c.item
		if (id != "" && it.Id != id) ||
			(sbID != "" && it.PodSandboxId != sbID) ||
			(f.State != nil && f.State.State != it.State) ||
			!matchLabels(f.LabelSelector, it.Labels) {
			continue
		}
		out = append(out, it)
	}
	return out
}

func (r *Runtime) containersLocked() []*runtimeapi.Container {
	if l := r.containerList.Load(); l != nil {
		return *l
	}
	l := make([]*runtimeapi.Container, len(r.st.containerOrder))
	for i, c := range r.st.containerOrder {
		l[i] = c.item
	}
	r.containerList.Store(&l)
	return l
}
