package fake

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// container is one container. Fields are guarded by Runtime.mu; status and
// item are immutable snapshots replaced on every change.
type container struct {
	id      string
	name    string
	sb      *sandbox
	cfg     *runtimeapi.ContainerConfig // private clone, HOSTNAME added; keptConfig's part under WithCompactConfigs
	imageID string
	logPath string // as reported; empty unless the config sets one
	logFile string // where lines are written; empty unless both dir and path are set
	prog    Program

	state       runtimeapi.ContainerState
	createdAt   int64
	startedAt   int64
	finishedAt  int64
	exitCode    int32
	reason      string
	message     string
	resources   *runtimeapi.ContainerResources
	termSent    bool          // SIGTERM delivered once, as containerd does
	exited      chan struct{} // closed when the process has exited
	timer       stopper       // scripted exit
	cleanup     func()        // from Program.Run
	attached    map[*attachment]struct{}
	stdinClosed bool // with StdinOnce, after the first attach's input ended
	stats       *runtimeapi.ContainerStats

	status *runtimeapi.ContainerStatus
	item   *runtimeapi.Container
}

func (c *container) takeTimer() stopper {
	t := c.timer
	c.timer = nil
	return t
}

func (c *container) takeCleanup() func() {
	f := c.cleanup
	c.cleanup = nil
	return f
}

// refreshContainerLocked rebuilds c's snapshots after a change.
func (r *Runtime) refreshContainerLocked(c *container) {
	spec, imageRef := c.cfg.GetImage(), c.imageID
	// Like containerd 1.6: report the image's first tag and repo digest
	// while the image exists, the config's spec and the ID otherwise.
	if im := r.st.images[c.imageID]; im != nil {
		if len(im.msg.RepoTags) > 0 {
			spec = &runtimeapi.ImageSpec{Image: im.msg.RepoTags[0]}
		}
		if len(im.msg.RepoDigests) > 0 {
			imageRef = im.msg.RepoDigests[0]
		}
	}
	reason := c.reason
	if c.state == runtimeapi.ContainerState_CONTAINER_EXITED && reason == "" {
		reason = "Completed"
		if c.exitCode != 0 {
			reason = "Error"
		}
	}
	md := c.cfg.GetMetadata()
	c.status = &runtimeapi.ContainerStatus{
		Id:          c.id,
		Metadata:    md,
		State:       c.state,
		CreatedAt:   c.createdAt,
		StartedAt:   c.startedAt,
		FinishedAt:  c.finishedAt,
		ExitCode:    c.exitCode,
		Image:       spec,
		ImageRef:    imageRef,
		Reason:      reason,
		Message:     c.message,
		Labels:      c.cfg.GetLabels(),
		Annotations: c.cfg.GetAnnotations(),
		Mounts:      c.cfg.GetMounts(),
		LogPath:     c.logPath,
		Resources:   c.resources,
	}
	c.item = &runtimeapi.Container{
		Id:           c.id,
		PodSandboxId: c.sb.id,
		Metadata:     md,
		Image:        c.cfg.GetImage(),
		ImageRef:     c.imageID,
		State:        c.state,
		CreatedAt:    c.createdAt,
		Labels:       c.cfg.GetLabels(),
		Annotations:  c.cfg.GetAnnotations(),
	}
	r.containerList.Store(nil)
}

// makeContainerName is containerd's container name:
// container_pod_namespace_uid_attempt.
func makeContainerName(c *runtimeapi.ContainerMetadata, s *runtimeapi.PodSandboxMetadata) string {
	return strings.Join([]string{c.GetName(), s.GetName(), s.GetNamespace(), s.GetUid(),
		strconv.FormatUint(uint64(c.GetAttempt()), 10)}, "_")
}

// checkCreateLocked validates a CreateContainerRequest in containerd's
// order and returns what creation needs.
func (r *Runtime) checkCreateLocked(req *runtimeapi.CreateContainerRequest) (*sandbox, string, *image, error) {
	sb, err := r.findSandboxLocked(req.GetPodSandboxId())
	if err != nil {
		return nil, "", nil, wrapLookup(err, "failed to find sandbox id %q", req.GetPodSandboxId())
	}
	if !sb.ready {
		// containerd looks up the sandbox's task, which is gone once stopped.
		return nil, "", nil, status.Errorf(codes.NotFound,
			"failed to get sandbox container task: no running task found: task %s not found: not found", sb.id)
	}
	md := req.GetConfig().GetMetadata()
	if md == nil {
		return nil, "", nil, status.Error(codes.Unknown, "container config must include metadata")
	}
	name := makeContainerName(md, req.GetSandboxConfig().GetMetadata())
	if owner, ok := r.st.containerNames[name]; ok {
		return nil, "", nil, status.Errorf(codes.Unknown,
			"failed to reserve container name %q: name %q is reserved for %q", name, name, owner)
	}
	ref := req.GetConfig().GetImage().GetImage()
	im := r.resolveImageLocked(ref)
	if im == nil {
		return nil, "", nil, status.Errorf(codes.NotFound, "failed to resolve image %q: not found", ref)
	}
	return sb, name, im, nil
}

// CreateContainer creates a container in a READY sandbox from a present
// image. What the container will do is decided now, by the image's
// Behavior.
func (r *Runtime) CreateContainer(ctx context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	if err := r.enter(ctx, mCreateContainer); err != nil {
		return nil, err
	}
	// Validate first, then run the Behavior (user code) without the lock,
	// then validate again under the write lock before inserting.
	r.mu.RLock()
	_, _, im, err := r.checkCreateLocked(req)
	var behave Behavior
	if err == nil {
		behave = r.st.behaviors[im.id]
	}
	r.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	if behave == nil {
		behave = DefaultBehavior
	}
	cfg := containerConfig(req)
	prog := behave(cfg)
	id := newID()
	now := nanos(r.clock.Now())

	r.mu.Lock()
	defer r.mu.Unlock()
	sb, name, im, err := r.checkCreateLocked(req)
	if err != nil {
		return nil, err
	}
	c := &container{
		id:        id,
		name:      name,
		sb:        sb,
		cfg:       cfg,
		imageID:   im.id,
		prog:      prog,
		state:     runtimeapi.ContainerState_CONTAINER_CREATED,
		createdAt: now,
		exited:    make(chan struct{}),
	}
	if r.compact {
		c.cfg = keptConfig(cfg)
	}
	if p := cfg.GetLogPath(); p != "" {
		dir := req.GetSandboxConfig().GetLogDirectory()
		c.logPath = filepath.Join(dir, p)
		if dir != "" {
			c.logFile = c.logPath
		}
	}
	c.resources = &runtimeapi.ContainerResources{Linux: mergeResources(nil, cfg.GetLinux().GetResources())}
	r.refreshContainerLocked(c)
	r.st.containerNames[name] = id
	r.st.containers[id] = c
	r.st.containerOrder = append(r.st.containerOrder, c)
	if uid := c.item.Labels[podUIDLabel]; uid != "" {
		r.st.containersByUID[uid] = append(r.st.containersByUID[uid], c)
	}
	sb.containers = append(sb.containers, c)
	r.publishLocked(c, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, now)
	return &runtimeapi.CreateContainerResponse{ContainerId: id}, nil
}

// keptConfig is the part of a container's config the fake reads after
// CreateContainer (statuses, listings, attach): WithCompactConfigs.
func keptConfig(cfg *runtimeapi.ContainerConfig) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{Metadata: cfg.GetMetadata(), Image: cfg.GetImage(), Labels: cfg.GetLabels(),
		Annotations: cfg.GetAnnotations(), Mounts: cfg.GetMounts(), LogPath: cfg.GetLogPath(),
		Stdin: cfg.GetStdin(), StdinOnce: cfg.GetStdinOnce(), Tty: cfg.GetTty()}
}

// containerConfig clones the request's config and, like containerd, puts
// HOSTNAME (the sandbox hostname, else the node's) in front of its env.
func containerConfig(req *runtimeapi.CreateContainerRequest) *runtimeapi.ContainerConfig {
	cfg := proto.Clone(req.GetConfig()).(*runtimeapi.ContainerConfig)
	host := req.GetSandboxConfig().GetHostname()
	if host == "" {
		host, _ = os.Hostname()
	}
	cfg.Envs = append([]*runtimeapi.KeyValue{{Key: "HOSTNAME", Value: []byte(host)}}, cfg.Envs...)
	return cfg
}

// StartContainer starts a CREATED container in a READY sandbox.
func (r *Runtime) StartContainer(ctx context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	if err := r.enter(ctx, mStartContainer); err != nil {
		return nil, err
	}
	now := r.clock.Now()
	var fx effects
	defer fx.run()
	r.mu.Lock()
	c, err := r.findContainerLocked(req.GetContainerId())
	if err != nil {
		r.mu.Unlock()
		return nil, wrapLookup(err, "an error occurred when try to find container %q", req.GetContainerId())
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_CREATED {
		r.mu.Unlock()
		return nil, status.Errorf(codes.Unknown, "failed to set starting state for container %q: container is in %s state",
			c.id, runtimeapi.ContainerState_name[int32(c.state)])
	}
	p := c.prog
	startErr := p.StartError
	if !c.sb.ready {
		startErr = fmt.Sprintf("sandbox container %q is not running", c.sb.id)
	}
	if startErr != "" {
		// Like containerd, a failed start leaves the container EXITED.
		c.state = runtimeapi.ContainerState_CONTAINER_EXITED
		c.finishedAt = nanos(now)
		c.exitCode = 128
		c.reason = "StartError"
		c.message = startErr
		close(c.exited)
		r.refreshContainerLocked(c)
		r.mu.Unlock()
		return nil, status.Error(codes.Unknown, startErr)
	}
	c.state = runtimeapi.ContainerState_CONTAINER_RUNNING
	c.startedAt = nanos(now)
	if c.logFile != "" {
		writeLog(c.logFile, now, Stdout, p.Stdout)
		writeLog(c.logFile, now, Stderr, p.Stderr)
	}
	r.refreshContainerLocked(c)
	r.publishLocked(c, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, nanos(now))
	if p.Exits && p.ExitAfter <= 0 {
		r.exitLocked(c, now, selfExit(p), &fx)
	}
	proc := r.procLocked(c)
	r.mu.Unlock()

	if p.Exits && p.ExitAfter > 0 {
		// The exit time is fixed now: a fake clock runs the callback
		// inside Step with its lock held, where reading it would deadlock.
		at := now.Add(p.ExitAfter)
		t := r.afterFunc(p.ExitAfter, func() { r.scriptedExit(c, at) })
		r.mu.Lock()
		keep := c.state == runtimeapi.ContainerState_CONTAINER_RUNNING && !r.st.closed
		if keep {
			c.timer = t
		}
		r.mu.Unlock()
		if !keep {
			t.Stop()
		}
	}
	if p.Run != nil && !(p.Exits && p.ExitAfter <= 0) {
		r.runProgram(c, p, proc)
	}
	return &runtimeapi.StartContainerResponse{}, nil
}

// procLocked returns c's Proc; mu must be held.
func (r *Runtime) procLocked(c *container) Proc {
	return Proc{
		ContainerID: c.id,
		HostNetwork: c.sb.hostNetwork,
		PodIP:       c.sb.ip,
		HostPorts:   r.hostPorts,
		Clock:       r.clock,
		Exit:        func(code int32) { r.exitContainer(c, exitStatus{code: code}) },
		Print:       func(s Stream, line string) { r.printLine(c, s, line) },
		Go:          func(f func()) { r.goBackground(f) },
	}
}

// runProgram calls Program.Run and keeps its cleanup until the exit.
func (r *Runtime) runProgram(c *container, p Program, proc Proc) {
	cleanup := p.Run(proc)
	if cleanup == nil {
		return
	}
	r.mu.Lock()
	keep := c.state == runtimeapi.ContainerState_CONTAINER_RUNNING && !r.st.closed
	if keep {
		c.cleanup = cleanup
	}
	r.mu.Unlock()
	if !keep {
		cleanup()
	}
}

// UpdateContainerResources updates the resources ContainerStatus reports:
// like containerd, fields left zero keep their value.
func (r *Runtime) UpdateContainerResources(ctx context.Context, req *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	if err := r.enter(ctx, mUpdateContainerResources); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.findContainerLocked(req.GetContainerId())
	if err != nil {
		return nil, wrapLookup(err, "failed to find container")
	}
	c.resources = &runtimeapi.ContainerResources{
		Linux:   mergeResources(c.resources.GetLinux(), req.GetLinux()),
		Windows: c.resources.GetWindows(),
	}
	r.refreshContainerLocked(c)
	return &runtimeapi.UpdateContainerResourcesResponse{}, nil
}

// ReopenContainerLog recreates the log file of a running container (after
// rotation moved it away).
func (r *Runtime) ReopenContainerLog(ctx context.Context, req *runtimeapi.ReopenContainerLogRequest) (*runtimeapi.ReopenContainerLogResponse, error) {
	if err := r.enter(ctx, mReopenContainerLog); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.findContainerLocked(req.GetContainerId())
	if err != nil {
		return nil, wrapLookup(err, "an error occurred when try to find container %q", req.GetContainerId())
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return nil, status.Error(codes.Unknown, "container is not running")
	}
	if c.logFile != "" {
		if err := touchLog(c.logFile); err != nil {
			return nil, status.Errorf(codes.Unknown, "failed to create and open log %q: %v", c.logFile, err)
		}
	}
	return &runtimeapi.ReopenContainerLogResponse{}, nil
}

// mergeResources returns old updated with the non-zero fields of upd, the
// way containerd applies resources to a container's spec. A memory limit
// without a swap limit also limits swap to it, as containerd reports.
func mergeResources(old, upd *runtimeapi.LinuxContainerResources) *runtimeapi.LinuxContainerResources {
	out := &runtimeapi.LinuxContainerResources{}
	if old != nil {
		proto.Merge(out, old)
	}
	if upd == nil {
		return out
	}
	proto.Merge(out, upd)
	if upd.MemoryLimitInBytes != 0 && upd.MemorySwapLimitInBytes == 0 {
		out.MemorySwapLimitInBytes = upd.MemoryLimitInBytes
	}
	return out
}
