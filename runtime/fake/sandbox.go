package fake

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// sandbox is a pod sandbox. Fields are guarded by Runtime.mu; status and
// item are immutable snapshots replaced on every change.
type sandbox struct {
	id          string
	name        string
	cfg         *runtimeapi.PodSandboxConfig // private clone
	handler     string
	hostNetwork bool
	ip          string
	createdAt   int64
	ready       bool
	containers  []*container // in creation order
	stats       *runtimeapi.PodSandboxStats

	status *runtimeapi.PodSandboxStatus
	item   *runtimeapi.PodSandbox
}

// refresh rebuilds the snapshots after a change.
func (sb *sandbox) refresh() {
	state := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	ip := ""
	if sb.ready {
		state = runtimeapi.PodSandboxState_SANDBOX_READY
		// containerd reports no IP once the network namespace is gone.
		ip = sb.ip
	}
	md := sb.cfg.GetMetadata()
	sb.status = &runtimeapi.PodSandboxStatus{
		Id:        sb.id,
		Metadata:  md,
		State:     state,
		CreatedAt: sb.createdAt,
		Network:   &runtimeapi.PodSandboxNetworkStatus{Ip: ip},
		Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{
			Options: sb.cfg.GetLinux().GetSecurityContext().GetNamespaceOptions(),
		}},
		Labels:         sb.cfg.GetLabels(),
		Annotations:    sb.cfg.GetAnnotations(),
		RuntimeHandler: sb.handler,
	}
	sb.item = &runtimeapi.PodSandbox{
		Id:             sb.id,
		Metadata:       md,
		State:          state,
		CreatedAt:      sb.createdAt,
		Labels:         sb.cfg.GetLabels(),
		Annotations:    sb.cfg.GetAnnotations(),
		RuntimeHandler: sb.handler,
	}
}

// makeSandboxName is containerd's sandbox name: name_namespace_uid_attempt.
func makeSandboxName(md *runtimeapi.PodSandboxMetadata) string {
	return strings.Join([]string{md.GetName(), md.GetNamespace(), md.GetUid(),
		strconv.FormatUint(uint64(md.GetAttempt()), 10)}, "_")
}

// RunPodSandbox creates a READY sandbox.
func (r *Runtime) RunPodSandbox(ctx context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	if err := r.enter(ctx, mRunPodSandbox); err != nil {
		return nil, err
	}
	md := req.GetConfig().GetMetadata()
	if md == nil {
		return nil, status.Error(codes.Unknown, "sandbox config must include metadata")
	}
	for _, f := range []struct{ name, value string }{
		{"name", md.GetName()}, {"namespace", md.GetNamespace()}, {"uid", md.GetUid()},
	} {
		if f.value == "" {
			return nil, status.Errorf(codes.InvalidArgument, "sandbox config metadata: %s must not be empty", f.name)
		}
	}
	cfg := proto.Clone(req.GetConfig()).(*runtimeapi.PodSandboxConfig)
	hostNet := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE
	id := newID()
	now := nanos(r.clock.Now())

	r.mu.Lock()
	defer r.mu.Unlock()
	name := makeSandboxName(md)
	if owner, ok := r.st.sandboxNames[name]; ok {
		return nil, status.Errorf(codes.Unknown, "failed to reserve sandbox name %q: name %q is reserved for %q", name, name, owner)
	}
	if !r.handlers[req.GetRuntimeHandler()] {
		return nil, status.Errorf(codes.Unknown, "failed to get sandbox runtime: no runtime for %q is configured", req.GetRuntimeHandler())
	}
	if hostNet && cfg.GetHostname() != "" {
		// The node's UTS namespace is shared; runc refuses (kubelet sends no
		// hostname for host-network pods).
		return nil, status.Error(codes.Unknown, "failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to set hostname without a private UTS namespace: unknown")
	}
	sb := &sandbox{
		id:          id,
		name:        name,
		cfg:         cfg,
		handler:     req.GetRuntimeHandler(),
		hostNetwork: hostNet,
		createdAt:   now,
		ready:       true,
	}
	if r.compact {
		sb.cfg = keptSandboxConfig(cfg)
	}
	if !sb.hostNetwork {
		r.st.podSeq++
		sb.ip = r.podIP(r.st.podSeq)
	}
	sb.refresh()
	r.st.sandboxNames[name] = id
	r.st.sandboxes[id] = sb
	r.st.sandboxOrder = append(r.st.sandboxOrder, sb)
	if uid := sb.item.Labels[podUIDLabel]; uid != "" {
		r.st.sandboxesByUID[uid] = append(r.st.sandboxesByUID[uid], sb)
	}
	r.sandboxList.Store(nil)
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: id}, nil
}

// StopPodSandbox kills the sandbox's running containers (SIGKILL, exit
// code 137) and makes it NOTREADY. Stopping a stopped sandbox succeeds; an
// unknown one is codes.NotFound, as in containerd 1.6.20 (later 1.6
// releases made that a success too).
func (r *Runtime) StopPodSandbox(ctx context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	if err := r.enter(ctx, mStopPodSandbox); err != nil {
		return nil, err
	}
	now := r.clock.Now()
	var fx effects
	defer fx.run()
	r.mu.Lock()
	defer r.mu.Unlock()
	sb, err := r.findSandboxLocked(req.GetPodSandboxId())
	if err != nil {
		return nil, wrapLookup(err, "an error occurred when try to find sandbox %q", req.GetPodSandboxId())
	}
	r.stopSandboxLocked(sb, now, &fx)
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

func (r *Runtime) stopSandboxLocked(sb *sandbox, now time.Time, fx *effects) {
	for _, c := range sb.containers {
		if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			r.exitLocked(c, now, sigkill, fx)
		}
	}
	if sb.ready {
		sb.ready = false
		sb.refresh()
		r.sandboxList.Store(nil)
		// Container events carry the sandbox status; later ones show it
		// NOTREADY, and the containers' own statuses are already current.
	}
}

// RemovePodSandbox stops the sandbox, removes its containers and then the
// sandbox. Removing an unknown sandbox succeeds.
func (r *Runtime) RemovePodSandbox(ctx context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	if err := r.enter(ctx, mRemovePodSandbox); err != nil {
		return nil, err
	}
	now := r.clock.Now()
	var fx effects
	defer fx.run()
	r.mu.Lock()
	defer r.mu.Unlock()
	sb, err := r.findSandboxLocked(req.GetPodSandboxId())
	if err != nil {
		if isNotFound(err) {
			return &runtimeapi.RemovePodSandboxResponse{}, nil
		}
		return nil, wrapLookup(err, "an error occurred when try to find sandbox %q", req.GetPodSandboxId())
	}
	r.stopSandboxLocked(sb, now, &fx)
	for len(sb.containers) > 0 {
		r.removeContainerLocked(sb.containers[len(sb.containers)-1], now, &fx)
	}
	delete(r.st.sandboxes, sb.id)
	delete(r.st.sandboxNames, sb.name)
	r.st.sandboxOrder = deleteItem(r.st.sandboxOrder, sb)
	if uid := sb.item.Labels[podUIDLabel]; uid != "" {
		if l := deleteItem(r.st.sandboxesByUID[uid], sb); len(l) > 0 {
			r.st.sandboxesByUID[uid] = l
		} else {
			delete(r.st.sandboxesByUID, uid)
		}
	}
	r.sandboxList.Store(nil)
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

// PodSandboxStatus returns the sandbox's status; with Verbose also
// containerd-like debug info.
func (r *Runtime) PodSandboxStatus(ctx context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	if err := r.enter(ctx, mPodSandboxStatus); err != nil {
		return nil, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	sb, err := r.findSandboxLocked(req.GetPodSandboxId())
	if err != nil {
		return nil, wrapLookup(err, "an error occurred when try to find sandbox")
	}
	resp := &runtimeapi.PodSandboxStatusResponse{Status: sb.status}
	if req.GetVerbose() {
		resp.Info = sandboxInfo(sb)
	}
	return resp, nil
}

// sandboxInfo is a small version of containerd's verbose "info" JSON.
func sandboxInfo(sb *sandbox) map[string]string {
	proc := "running"
	if !sb.ready {
		proc = "stopped"
	}
	cfg, err := protojson.Marshal(sb.cfg)
	if err != nil {
		cfg = []byte("null")
	}
	b, err := json.Marshal(map[string]any{
		"pid":                0,
		"processStatus":      proc,
		"netNamespaceClosed": !sb.ready,
		"image":              PauseImage,
		"runtimeHandler":     sb.handler,
		"runtimeType":        "io.containerd.runc.v2",
		"config":             json.RawMessage(cfg),
	})
	if err != nil {
		b = []byte(fmt.Sprintf("{%q:%q}", "error", err.Error()))
	}
	return map[string]string{"info": string(b)}
}

// ListPodSandbox lists sandboxes in creation order. The ID filter takes an
// exact ID or a unique prefix, like containerd.
func (r *Runtime) ListPodSandbox(ctx context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	if err := r.enter(ctx, mListPodSandbox); err != nil {
		return nil, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	f := req.GetFilter()
	all := r.sandboxesLocked()
	if f == nil || (f.Id == "" && f.State == nil && len(f.LabelSelector) == 0) {
		return &runtimeapi.ListPodSandboxResponse{Items: all}, nil
	}
	id := f.Id
	if sb, err := r.findSandboxLocked(id); err == nil {
		id = sb.id
	}
	if uid, ok := f.LabelSelector[podUIDLabel]; ok {
		byUID := r.st.sandboxesByUID[uid]
		all = make([]*runtimeapi.PodSandbox, len(byUID))
		for i, sb := range byUID {
			all[i] = sb.item
		}
	}
	var out []*runtimeapi.PodSandbox
	for _, s := range all {
		if (id != "" && s.Id != id) ||
			(f.State != nil && f.State.State != s.State) ||
			!matchLabels(f.LabelSelector, s.Labels) {
			continue
		}
		out = append(out, s)
	}
	return &runtimeapi.ListPodSandboxResponse{Items: out}, nil
}

func (r *Runtime) sandboxesLocked() []*runtimeapi.PodSandbox {
	if l := r.sandboxList.Load(); l != nil {
		return *l
	}
	l := make([]*runtimeapi.PodSandbox, len(r.st.sandboxOrder))
	for i, sb := range r.st.sandboxOrder {
		l[i] = sb.item
	}
	r.sandboxList.Store(&l)
	return l
}

// keptSandboxConfig is the part of a sandbox's config the fake reads after
// RunPodSandbox (statuses, listings, stats): WithCompactConfigs.
func keptSandboxConfig(cfg *runtimeapi.PodSandboxConfig) *runtimeapi.PodSandboxConfig {
	kept := &runtimeapi.PodSandboxConfig{Metadata: cfg.GetMetadata(), Labels: cfg.GetLabels(), Annotations: cfg.GetAnnotations()}
	if ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions(); ns != nil {
		kept.Linux = &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: ns}}
	}
	return kept
}
