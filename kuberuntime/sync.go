package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nodekit-dev/nodekit/containerlog"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/podpath"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/criconv"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// SyncOptions are the per-call inputs of SyncPod.
type SyncOptions struct {
	// CgroupParent is the pod's cgroup (from the cgroup manager).
	CgroupParent string
	// Probes reports failed liveness/startup probes (nil: none failed).
	Probes ProbeResults
	// Resize, if set, records what each container is given, and running
	// containers are resized to the pod's resources when they differ
	// (in-place resize; pod is then the allocated pod). Nil: containers
	// keep what they started with.
	Resize ResizeState
}

// SyncPod brings the pod's sandbox and containers in line with its spec,
// given the status last read from the runtime (nil for none):
//  1. compute the actions (ComputePodActions);
//  2. kill the pod when the sandbox must be recreated, else kill the
//     containers that must go;
//  3. create the sandbox if needed;
//  4. start the new ephemeral containers, then the init containers and
//     sidecars to start, in spec order, then the regular containers to
//     start, each after its CrashLoopBackOff and image pull. An ephemeral
//     container or a sidecar that fails to start does not hold back the
//     rest.
//
// A failing container does not stop the others; every step is in the result.
func (m *Manager) SyncPod(ctx context.Context, pod *v1.Pod, status *kc.PodStatus, opts SyncOptions) *SyncResult {
	if status == nil {
		status = &kc.PodStatus{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
	}
	res := &SyncResult{}
	ctx = withStartSlot(ctx, &startSlot{slots: m.starts})
	defer giveStartSlot(ctx)
	creds := &podCredentials{m: m, pod: pod}
	defer creds.reportMissing(res)
	a := ComputePodActions(pod, status, opts.Probes)
	resize := m.addResizeActions(pod, status, opts.Resize, &a)

	if a.KillPod {
		if a.CreateSandbox && len(status.SandboxStatuses) > 0 {
			m.event(pod, nil, v1.EventTypeNormal, EventSandboxChanged, "Pod sandbox changed, it will be killed and re-created.")
		}
		kill := m.killPodWithStatus(ctx, pod, PodFromStatus(status), nil)
		res.Steps = append(res.Steps, kill.Steps...)
		if kill.Err() != nil {
			return res
		}
		if a.CreateSandbox {
			m.removeInitContainers(ctx, pod, status)
		}
	} else {
		for id, k := range a.ContainersToKill {
			err := m.killContainer(ctx, pod, k.Container, id, k.Reason, nil, nil)
			res.add(ActionKillContainer, k.Name, err)
			if err != nil {
				return res
			}
		}
		// The kubelet's step 6: running containers resized before any
		// starts; a failure leaves the rest to the next sync.
		if len(resize.Update) > 0 && m.resizeContainers(ctx, pod, resize, opts.Resize, res) != nil {
			return res
		}
	}
	if len(a.InitContainersToStart) > 0 {
		m.pruneInitContainers(ctx, pod, status)
	}

	sandboxID := a.SandboxID
	podIPs := status.IPs
	sandboxCfg, err := m.SandboxConfig(pod, a.Attempt, opts.CgroupParent)
	if err != nil {
		if a.CreateSandbox {
			m.cfg.Metrics.sandboxCreated(err)
			m.event(pod, nil, v1.EventTypeWarning, EventFailedSandbox, "Failed to create pod sandbox: %v", err)
		}
		res.add(ActionCreatePodSandbox, podRef(pod), fail(ErrConfigPodSandbox, "%w", err))
		return res
	}
	if a.CreateSandbox {
		sandboxID, podIPs, err = m.createSandbox(ctx, pod, sandboxCfg)
		if errors.Is(err, errNoTurn) {
			res.add(ActionCreatePodSandbox, podRef(pod), err)
			return res
		}
		m.cfg.Metrics.sandboxCreated(err)
		if err != nil {
			m.event(pod, nil, v1.EventTypeWarning, EventFailedSandbox, "Failed to create pod sandbox: %v", err)
			res.add(ActionCreatePodSandbox, podRef(pod), err)
			return res
		}
		res.add(ActionCreatePodSandbox, podRef(pod), nil)
	}
	if sandboxID == "" {
		return res // nothing to run: the pod is done
	}
	if pod.Spec.HostNetwork && len(podIPs) == 0 && m.cfg.HostIP != "" {
		// The kubelet's SyncPod takes the API status's IPs, a host-network
		// pod's being the node's: its containers' status.podIP env too.
		podIPs = []string{m.cfg.HostIP}
	}

	// The pod's image volumes are pulled once, before the first container
	// to start (the kubelet's lazyStart); a container that mounts one
	// whose pull failed waits with that failure as its reason.
	var pulls map[string]imageVolumePull
	pulled := false
	// ec is the ephemeral container c is, nil for the others.
	start := func(action SyncAction, typ string, c *v1.Container, ec *v1.EphemeralContainer) error {
		if !pulled {
			pulls, pulled = m.pullImageVolumes(ctx, pod, sandboxCfg, creds), true
		}
		if err := m.checkBackOff(pod, c, status); err != nil {
			res.add(action, c.Name, err)
			return err
		}
		images, err := m.imageVolumesFor(pod, c, pulls)
		if err != nil {
			// Counted as a start, not as a start error: the kubelet fails
			// it before its startContainer.
			m.cfg.Metrics.containerStarted(typ, nil)
			res.add(action, c.Name, err)
			return err
		}
		err = m.startContainer(ctx, sandboxID, sandboxCfg, pod, c, ec, status, podIPs, images, creds)
		if err == nil && ec == nil && opts.Resize != nil {
			if serr := opts.Resize.SetActuated(pod.UID, c.Name, *c.Resources.DeepCopy()); serr != nil {
				m.log().Error(serr, "recording a container's resources", "pod", fmtPod(pod), "container", c.Name)
			}
		}
		if !errors.Is(err, errNoTurn) {
			m.cfg.Metrics.containerStarted(typ, err)
		}
		if err == nil && typ == containerTypeInit && !IsRestartableInitContainer(c) {
			m.cfg.Startup.RecordInitContainerStarted(pod.UID, m.cfg.Clock.Now())
		}
		res.add(action, c.Name, err)
		return err
	}
	// Ephemeral containers first, so a failing init container does not
	// keep one from debugging it; a failed one holds nothing back.
	for _, i := range a.EphemeralContainersToStart {
		ec := &pod.Spec.EphemeralContainers[i]
		_ = start(ActionStartContainer, containerTypeEphemeral, (*v1.Container)(&ec.EphemeralContainerCommon), ec)
	}
	for _, i := range a.InitContainersToStart {
		c := &pod.Spec.InitContainers[i]
		if err := start(ActionInitContainer, containerTypeInit, c, nil); err != nil && !IsRestartableInitContainer(c) {
			return res // a regular init container that failed to start holds the rest back
		}
	}
	m.recordInitContainersFinished(pod, status)
	for _, i := range a.ContainersToStart {
		_ = start(ActionStartContainer, containerTypeContainer, &pod.Spec.Containers[i], nil)
	}
	return res
}

// recordInitContainersFinished tells Startup when the pod's init
// containers (not sidecars) exited, as the kubelet's SyncPod does before
// it starts the regular containers.
func (m *Manager) recordInitContainersFinished(pod *v1.Pod, status *kc.PodStatus) {
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if IsRestartableInitContainer(c) {
			continue
		}
		for _, cs := range status.ContainerStatuses {
			if cs.Name == c.Name && cs.State == kc.ContainerStateExited && !cs.FinishedAt.IsZero() {
				m.cfg.Startup.RecordInitContainerFinished(pod.UID, cs.FinishedAt)
			}
		}
	}
}

// targetID is the kubelet's getTargetID: the runtime ID of the container
// whose process namespace the ephemeral container ec joins (its
// targetContainerName), or "" when ec is nil or names none. The target is
// looked up by name among the statuses, newest first.
func targetID(ec *v1.EphemeralContainer, status *kc.PodStatus) (string, error) {
	if ec == nil || ec.TargetContainerName == "" {
		return "", nil
	}
	cs := status.FindContainerStatusByName(ec.TargetContainerName)
	if cs == nil {
		return "", fmt.Errorf("unable to find target container %s", ec.TargetContainerName)
	}
	return cs.ID, nil
}

func (m *Manager) createSandbox(ctx context.Context, pod *v1.Pod, cfg *runtimeapi.PodSandboxConfig) (string, []string, error) {
	if err := os.MkdirAll(cfg.LogDirectory, 0o755); err != nil {
		return "", nil, fail(ErrCreatePodSandbox, "pod %s: log directory: %w", podRef(pod), err)
	}
	if err := takeStartSlot(ctx); err != nil {
		return "", nil, fail(ErrCreatePodSandbox, "pod %s: %w", podRef(pod), err)
	}
	id, err := m.cfg.Runtime.RunPodSandbox(uncancelled(ctx), cfg, m.cfg.RuntimeHandler)
	if err != nil {
		return "", nil, fail(ErrCreatePodSandbox, "pod %s: %w", podRef(pod), err)
	}
	st, err := m.cfg.Runtime.PodSandboxStatus(ctx, id, false)
	if err != nil {
		return "", nil, fail(ErrPodSandboxStatus, "pod %s: sandbox %s: %w", podRef(pod), id, err)
	}
	var ips []string
	if !pod.Spec.HostNetwork {
		ips = criconv.SandboxStatusFromCRI(st.Status).IPs
	}
	return id, ips, nil
}

// checkBackOff applies CrashLoopBackOff to a container whose last instance
// exited: the first restart is immediate, later ones wait 10s, 20s, ... 5m
// after the last exit.
func (m *Manager) checkBackOff(pod *v1.Pod, c *v1.Container, status *kc.PodStatus) error {
	var last *kc.ContainerStatus
	for _, cs := range status.ContainerStatuses {
		if cs.Name == c.Name && cs.State == kc.ContainerStateExited {
			last = cs
			break
		}
	}
	if last == nil {
		return nil
	}
	key := backoffKey(pod, c)
	if m.cfg.BackOff.IsInBackOffSince(key, last.FinishedAt) {
		m.event(pod, c, v1.EventTypeWarning, EventBackOff, "Back-off restarting failed container %s in pod %s", c.Name, fmtPod(pod))
		return fail(ErrCrashLoopBackOff, "back-off %s restarting failed container=%s pod=%s",
			m.cfg.BackOff.Get(key), c.Name, fmtPod(pod))
	}
	m.cfg.BackOff.Next(key, last.FinishedAt)
	return nil
}

// startContainer starts c; ec is the ephemeral container c is, nil for the
// others; images are the image IDs of the image volumes c mounts, by
// volume name; creds the pod's pull secrets for its image.
func (m *Manager) startContainer(ctx context.Context, sandboxID string, sandboxCfg *runtimeapi.PodSandboxConfig,
	pod *v1.Pod, c *v1.Container, ec *v1.EphemeralContainer, status *kc.PodStatus, podIPs []string, images map[string]string,
	creds *podCredentials) error {
	if err := validateContainerIn(pod, c); err != nil {
		return fail(ErrCreateConfig, "pod %s: %w", podRef(pod), err)
	}
	imageRef, err := m.ensureImage(ctx, pod, c, sandboxCfg, creds)
	if err != nil {
		return err
	}
	restartCount := 0
	if cs := status.FindContainerStatusByName(c.Name); cs != nil {
		restartCount = cs.RestartCount + 1
	} else {
		// Containers may have been removed while their logs stayed: keep counting.
		restartCount = restartCountFromLogs(sandboxCfg.LogDirectory, c.Name)
	}
	target, err := targetID(ec, status)
	if err != nil {
		m.event(pod, c, v1.EventTypeWarning, EventFailed, "Error: %v", err)
		return fail(ErrCreateConfig, "pod %s: container %s: %w", podRef(pod), c.Name, err)
	}
	if err := m.verifyRunAsNonRoot(ctx, pod, c, imageRef); err != nil {
		m.event(pod, c, v1.EventTypeWarning, EventFailed, "Error: %v", err)
		return fail(ErrCreateConfig, "pod %s: %w", podRef(pod), err)
	}
	env, err := m.ResolveEnv(pod, c, podIPs) // first: subPathExpr expands with it
	if err != nil {
		return fail(ErrCreateConfig, "pod %s: %w", podRef(pod), err)
	}
	var mounts []kc.Mount
	if m.cfg.Mounts != nil {
		if mounts, err = m.cfg.Mounts(pod, c, env); err != nil {
			return fail(ErrCreateConfig, "pod %s: container %s: volumes: %w", podRef(pod), c.Name, err)
		}
		if mounts, err = withImages(pod, mounts, images); err != nil {
			return fail(ErrCreateConfig, "pod %s: container %s: volumes: %w", podRef(pod), c.Name, err)
		}
	}
	if tm, err := m.terminationMessageMount(pod, c); err != nil {
		return fail(ErrCreateConfig, "pod %s: container %s: %w", podRef(pod), c.Name, err)
	} else if tm != nil {
		mounts = append(mounts, *tm)
	}
	if hosts, err := m.etcHostsMount(pod, podIPs, mounts); err != nil {
		return fail(ErrCreateConfig, "pod %s: container %s: %w", podRef(pod), c.Name, err)
	} else if hosts != nil {
		mounts = append(mounts, *hosts)
	}
	cfg, err := m.ContainerConfig(pod, c, ContainerInput{RestartCount: restartCount, ImageRef: imageRef, PodIPs: podIPs, Mounts: mounts,
		Env: env, TargetID: target})
	if err != nil {
		return fail(ErrCreateConfig, "pod %s: %w", podRef(pod), err)
	}
	if err := takeStartSlot(ctx); err != nil {
		return fail(ErrCreateContainer, "pod %s: container %s: %w", podRef(pod), c.Name, err)
	}
	id, err := m.cfg.Runtime.CreateContainer(uncancelled(ctx), sandboxID, cfg, sandboxCfg)
	if err != nil {
		m.event(pod, c, v1.EventTypeWarning, EventFailed, "Error: %v", err)
		return fail(ErrCreateContainer, "pod %s: container %s: %w", podRef(pod), c.Name, err)
	}
	m.event(pod, c, v1.EventTypeNormal, EventCreated, "Created container: %s", c.Name)
	if err := m.cfg.Runtime.StartContainer(uncancelled(ctx), id); err != nil {
		m.event(pod, c, v1.EventTypeWarning, EventFailed, "Error: %v", err)
		return fail(ErrRunContainer, "pod %s: container %s: %w", podRef(pod), c.Name, err)
	}
	m.event(pod, c, v1.EventTypeNormal, EventStarted, "Started container %s", c.Name)
	if dir := m.cfg.ContainersLogDir; dir != "" {
		ref := containerlog.ContainerRef{PodName: pod.Name, PodNamespace: pod.Namespace, ContainerName: c.Name, ContainerID: id}
		if err := containerlog.CreateSymlink(dir, ref, filepath.Join(sandboxCfg.GetLogDirectory(), cfg.GetLogPath())); err != nil {
			m.cfg.Log.Error(err, "Failed to create legacy symbolic link", "pod", podRef(pod), "containerName", c.Name)
		}
	}
	if c.Lifecycle != nil && c.Lifecycle.PostStart != nil {
		giveStartSlot(ctx) // a hook may run for the grace period
		if msg, err := m.runHook(ctx, pod, c, id, podIPs, c.Lifecycle.PostStart, 0); err != nil {
			// The kubelet kills a container whose postStart hook failed.
			m.event(pod, c, v1.EventTypeWarning, EventFailedPostStart, "PostStartHook failed")
			kerr := m.killContainer(ctx, pod, c, id, "FailedPostStartHook", nil, nil)
			return fail(ErrPostStartHook, "pod %s: container %s: postStart hook failed: %w %s (kill: %v)", podRef(pod), c.Name, err, msg, kerr)
		}
	}
	return nil
}

func restartCountFromLogs(podLogDir, container string) int {
	dir, err := podpath.Join(podLogDir, container)
	if err != nil {
		return 0
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	count := 0
	for _, e := range entries {
		n, err := strconv.Atoi(strings.TrimSuffix(e.Name(), ".log"))
		if err == nil && strings.HasSuffix(e.Name(), ".log") && n+1 > count {
			count = n + 1
		}
	}
	return count
}

// removeInitContainers removes every init container instance, before a new
// sandbox reruns initialization from the start.
func (m *Manager) removeInitContainers(ctx context.Context, pod *v1.Pod, status *kc.PodStatus) {
	for i := range pod.Spec.InitContainers {
		for _, cs := range status.ContainerStatuses {
			if cs.Name == pod.Spec.InitContainers[i].Name && cs.State != kc.ContainerStateRunning {
				if err := m.cfg.Runtime.RemoveContainer(ctx, cs.ID); err != nil {
					m.log().Error(err, "removing init container", "pod", fmtPod(pod), "container", cs.Name)
				}
			}
		}
	}
}

// pruneInitContainers keeps only the newest exited instance of each init
// container, so restarts don't pile up dead containers.
func (m *Manager) pruneInitContainers(ctx context.Context, pod *v1.Pod, status *kc.PodStatus) {
	for i := range pod.Spec.InitContainers {
		seen := false
		for _, cs := range status.ContainerStatuses {
			if cs.Name != pod.Spec.InitContainers[i].Name || cs.State != kc.ContainerStateExited {
				continue
			}
			if !seen {
				seen = true
				continue
			}
			if err := m.cfg.Runtime.RemoveContainer(ctx, cs.ID); err != nil && !errors.Is(err, runtime.ErrNotFound) {
				m.log().Error(err, "pruning init container", "pod", fmtPod(pod), "container", cs.Name)
			}
		}
	}
}

// PodFromStatus lists a status's running containers and all its sandboxes
// as a Pod (the kubelet's ConvertPodStatusToRunningPod),
// for KillPod.
func PodFromStatus(s *kc.PodStatus) *kc.Pod {
	p := &kc.Pod{ID: s.ID, Name: s.Name, Namespace: s.Namespace}
	for _, cs := range s.ContainerStatuses {
		if cs.State == kc.ContainerStateRunning {
			p.Containers = append(p.Containers, &kc.Container{ID: cs.ID, Name: cs.Name, Image: cs.Image, ImageRef: cs.ImageRef,
				Hash: cs.Hash, State: cs.State, SandboxID: cs.SandboxID, CreatedAt: cs.CreatedAt.UnixNano()})
		}
	}
	for _, ss := range s.SandboxStatuses {
		st := kc.ContainerStateExited
		if ss.Ready() {
			st = kc.ContainerStateRunning
		}
		p.Sandboxes = append(p.Sandboxes, &kc.Container{ID: ss.ID, Name: kc.SandboxContainerName, State: st, SandboxID: ss.ID,
			CreatedAt: ss.CreatedAt.UnixNano()})
	}
	return p
}

// uncancelled is ctx for the CRI calls that make a sandbox or a container
// and start it: a sync cancelled mid-call (the pod deleted while it
// starts) lets them finish, within the runtime client's own request
// timeout, and stops at the next step. containerd 2 leaves a container
// whose StartContainer was cancelled "in starting state" with its runc init
// waiting for good: it cannot be removed, nor its pod's cgroup, and the
// pod's termination fails until the node restarts (#34's churn hit it).
func uncancelled(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }
