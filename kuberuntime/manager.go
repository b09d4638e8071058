package kuberuntime

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"time"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/criconv"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/nodekit-dev/nodekit/resources"
)

// RuntimeService is the part of a CRI runtime the Manager uses. *Client
// implements it, as does anything that implements the cri-api's own
// internalapi.RuntimeService.
type RuntimeService interface {
	RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error)
	StopPodSandbox(ctx context.Context, id string) error
	RemovePodSandbox(ctx context.Context, id string) error
	PodSandboxStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error)
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	CreateContainer(ctx context.Context, sandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
	StartContainer(ctx context.Context, id string) error
	StopContainer(ctx context.Context, id string, timeout int64) error
	RemoveContainer(ctx context.Context, id string) error
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
	UpdateContainerResources(ctx context.Context, id string, resources *runtimeapi.ContainerResources) error
	ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, error)
}

// ImageService is the part of the CRI image service the Manager uses.
type ImageService interface {
	ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error)
	PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
}

var (
	_ RuntimeService = internalapi.RuntimeService(nil)
	_ ImageService   = internalapi.ImageManagerService(nil)
)

// MountProvider returns the CRI mounts of a container (volumes are the
// caller's business; the manager only passes them on).
type MountProvider func(pod *v1.Pod, c *v1.Container, env []v1.EnvVar) ([]kc.Mount, error)

// ManagerConfig configures a Manager. Zero fields take the kubelet's defaults.
type ManagerConfig struct {
	Runtime RuntimeService
	Images  ImageService
	// RuntimeHandler is the RuntimeClass handler for sandboxes ("" = default).
	RuntimeHandler string
	// UserNamespaces gives pods with spec.hostUsers: false their user
	// namespace (package userns's *Manager); nil refuses such pods with
	// ErrNoUserNamespaces.
	UserNamespaces UserNamespaces
	// SandboxLabels are added to every sandbox's labels (after the pod's
	// own, before the kubelet's io.kubernetes.pod.* ones), e.g. to tell one
	// agent's pods from another's on a shared runtime.
	SandboxLabels map[string]string
	// OwnPodsOnly restricts GetPods to the sandboxes carrying every one of
	// SandboxLabels and to their containers, so that a PLEG, or an orphan
	// sweep, over this manager never sees another agent's pods on a shared
	// runtime. The kubelet owns its runtime and lists everything.
	OwnPodsOnly bool
	// PodLogsDir is the root of container logs (default /var/log/pods).
	// NewManager creates it, so an unwritable default fails there, naming
	// the field, rather than at the first SyncPod.
	PodLogsDir string
	// ContainersLogDir is where each started container's log gets the
	// kubelet's symlink (/var/log/containers, what log shippers read:
	// package containerlog); "" makes none.
	ContainersLogDir string
	// RootDir is --root-dir: each container instance gets an empty
	// termination-message file under <RootDir>/pods/<uid>/containers/<name>/,
	// mounted at its TerminationMessagePath, whose content becomes its
	// terminated state's message. Empty: no such file (the message is only
	// the runtime's, or the log's under FallbackToLogsOnError).
	RootDir string
	// DNS configures sandbox DNS (default: HostDNS("/etc/resolv.conf", nil, "")).
	DNS DNSConfigurer
	// Services, in cluster mode, gives containers the service environment
	// variables; nil: none.
	Services Services
	// ClusterDomain is --cluster-domain: a pod with a subdomain is named
	// <hostname>.<subdomain>.<namespace>.svc.<ClusterDomain> in its
	// managed /etc/hosts.
	ClusterDomain string
	// HostsFile is the node's hosts file, which host-network pods get
	// (default /etc/hosts).
	HostsFile string
	// Mounts gives each container its mounts (default none).
	Mounts MountProvider
	// Resources tunes container resources (node memory, CFS quota).
	Resources resources.Options
	// CgroupV2 says the node runs the unified cgroup v2 hierarchy (the
	// kubelet's isCgroup2UnifiedMode; cgroupmgr's ModeV2). With it, each
	// container's resources ask for memory.oom.group=1, unless
	// SingleProcessOOMKill.
	CgroupV2 bool
	// SingleProcessOOMKill is the KubeletConfiguration field: on cgroup
	// v2, an OOM kill takes only the chosen process, not the whole
	// container. The kubelet's default on cgroup v2 is false; on cgroup
	// v1 only single processes are ever killed.
	SingleProcessOOMKill bool
	// HostIP is reported to containers through the downward API.
	HostIP string
	// NodeAllocatable is what the downward API reports for a limit a
	// container does not set (cpu, memory, ephemeral-storage), as the
	// kubelet does; nil, or a nil list, reports 0.
	NodeAllocatable func() v1.ResourceList
	// Metrics, if set, counts the sandboxes and containers SyncPod starts
	// (register it with your registry).
	Metrics *SyncMetrics
	// Clock drives restart back-off (default: wall clock).
	Clock clock.Clock
	// BackOff is the CrashLoopBackOff tracker (default 10s doubling to 5m).
	BackOff *Backoff
	// ImageBackOff is the ImagePullBackOff tracker (default 10s doubling to 5m).
	ImageBackOff *Backoff
	// MinimumGracePeriod is the floor of a kill's grace period (kubelet: 2s).
	MinimumGracePeriod time.Duration
	// MaxParallelPodStarts is how many SyncPods may be in the runtime's
	// start calls (RunPodSandbox, CreateContainer, StartContainer) at once;
	// the others wait their turn, in order, and a pod keeps its turn until
	// its sync ends, except while it pulls an image or runs a postStart
	// hook. Zero: DefaultParallelPodStartsPerCPU per CPU (GOMAXPROCS);
	// negative: no bound, as the kubelet.
	MaxParallelPodStarts int
	// HookHTTPClient runs httpGet lifecycle hooks (default: the probes'
	// settings: no proxy from the environment, no certificate check, no
	// kept-alive connections, redirects followed only on the same host).
	HookHTTPClient *http.Client
	// Objects reads the ConfigMaps and Secrets env refers to (cluster
	// mode); nil refuses such references by name.
	Objects Objects
	// PullSecrets reads the Secrets a pod's imagePullSecrets name (cluster
	// mode; *volume/apiclient.Objects is one), as the kubelet's secret
	// manager: their credentials for an image's registry (package
	// credentials) are passed to PullImage, each in turn until one works.
	// A secret it cannot read is logged and skipped. Nil: every pull
	// secret is such a secret, images are pulled without credentials.
	PullSecrets SecretGetter
	// Recorder records the kubelet's events (Pulled, Created, Started,
	// Killing, BackOff...) on the pods; nil records none.
	Recorder EventRecorder
	// Streaming gives the runtime's URLs for exec, attach and port-forward
	// sessions (GetExec, GetAttach, GetPortForward); nil refuses them.
	// *Client is one.
	Streaming StreamingService
	// Startup, if set, is told of each pod's image pulls and init
	// containers (podstartup's *Tracker leaves them out of the startup SLI).
	Startup StartupRecorder
	Log     logr.Logger
}

// StartupRecorder is told what of a pod's start is not the node's doing:
// the kubelet's ImagePodPullingTimeRecorder and
// podInitContainerTimeRecorder.
type StartupRecorder interface {
	RecordImageStartedPulling(uid types.UID)
	RecordImageFinishedPulling(uid types.UID)
	RecordInitContainerStarted(uid types.UID, at time.Time)
	RecordInitContainerFinished(uid types.UID, at time.Time)
}

// noStartup records nothing.
type noStartup struct{}

func (noStartup) RecordImageStartedPulling(types.UID)              {}
func (noStartup) RecordImageFinishedPulling(types.UID)             {}
func (noStartup) RecordInitContainerStarted(types.UID, time.Time)  {}
func (noStartup) RecordInitContainerFinished(types.UID, time.Time) {}

// Manager is the kubelet's "kuberuntime" layer: it turns *v1.Pod specs into
// CRI sandboxes and containers, and reads back their status.
type Manager struct {
	cfg    ManagerConfig
	starts startSlots
}

// NewManager returns a Manager with the kubelet's defaults filled in.
func NewManager(cfg ManagerConfig) (*Manager, error) {
	if cfg.Runtime == nil || cfg.Images == nil {
		return nil, errors.New("runtime manager: Runtime and Images are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.HostsFile == "" {
		cfg.HostsFile = etcHostsPath
	}
	if cfg.DNS == nil {
		cfg.DNS = HostDNS("/etc/resolv.conf", nil, "")
	}
	if cfg.BackOff == nil {
		cfg.BackOff = NewBackoff(cfg.Clock, DefaultBackOffInitial, DefaultBackOffMax)
	}
	if cfg.ImageBackOff == nil {
		cfg.ImageBackOff = NewBackoff(cfg.Clock, DefaultBackOffInitial, DefaultBackOffMax)
	}
	if cfg.Startup == nil {
		cfg.Startup = noStartup{}
	}
	if cfg.MinimumGracePeriod == 0 {
		cfg.MinimumGracePeriod = 2 * time.Second
	}
	if cfg.PodLogsDir == "" {
		cfg.PodLogsDir = DefaultPodLogsDir
	}
	if err := os.MkdirAll(cfg.PodLogsDir, 0o755); err != nil {
		return nil, fmt.Errorf("runtime manager: PodLogsDir %q: %w (set ManagerConfig.PodLogsDir to a writable directory)", cfg.PodLogsDir, err)
	}
	if cfg.HookHTTPClient == nil {
		cfg.HookHTTPClient = newHookHTTPClient()
	}
	if cfg.OwnPodsOnly && len(cfg.SandboxLabels) == 0 {
		return nil, errors.New("runtime manager: OwnPodsOnly needs SandboxLabels to tell its pods by")
	}
	return &Manager{cfg: cfg, starts: newStartSlots(cfg.MaxParallelPodStarts)}, nil
}

// GetPods lists the pods the runtime knows, from the manager's labels. With
// all=false only running containers and ready sandboxes are included. With
// OwnPodsOnly, only this manager's sandboxes (by SandboxLabels) and the
// containers in them.
func (m *Manager) GetPods(ctx context.Context, all bool) ([]*kc.Pod, error) {
	var sf *runtimeapi.PodSandboxFilter
	var cf *runtimeapi.ContainerFilter
	if !all {
		sf = &runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}}
		cf = &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}
	}
	if m.cfg.OwnPodsOnly {
		// Every sandbox of ours, whatever its state: a container records no
		// sandbox labels, so its sandbox is how one tells whose it is.
		sf = &runtimeapi.PodSandboxFilter{LabelSelector: m.cfg.SandboxLabels}
	}
	sandboxes, err := m.cfg.Runtime.ListPodSandbox(ctx, sf)
	if err != nil {
		return nil, err
	}
	containers, err := m.cfg.Runtime.ListContainers(ctx, cf)
	if err != nil {
		return nil, err
	}
	if m.cfg.OwnPodsOnly {
		containers = inSandboxes(containers, sandboxes)
		if !all {
			sandboxes = readySandboxes(sandboxes)
		}
	}
	return GroupPods(sandboxes, containers), nil
}

// inSandboxes keeps the containers whose sandbox is listed.
func inSandboxes(containers []*runtimeapi.Container, sandboxes []*runtimeapi.PodSandbox) []*runtimeapi.Container {
	ids := make(map[string]bool, len(sandboxes))
	for _, s := range sandboxes {
		ids[s.Id] = true
	}
	out := make([]*runtimeapi.Container, 0, len(containers))
	for _, c := range containers {
		if ids[c.PodSandboxId] {
			out = append(out, c)
		}
	}
	return out
}

func readySandboxes(sandboxes []*runtimeapi.PodSandbox) []*runtimeapi.PodSandbox {
	out := make([]*runtimeapi.PodSandbox, 0, len(sandboxes))
	for _, s := range sandboxes {
		if s.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			out = append(out, s)
		}
	}
	return out
}

// GroupPods groups CRI sandboxes and containers into Pods by their pod UID
// label, sorted by UID so results are stable. Objects without the label were
// not made by a kubelet and are left out.
func GroupPods(sandboxes []*runtimeapi.PodSandbox, containers []*runtimeapi.Container) []*kc.Pod {
	pods := map[types.UID]*kc.Pod{}
	get := func(li kc.LabelInfo) *kc.Pod {
		p := pods[li.PodUID]
		if p == nil {
			p = &kc.Pod{ID: li.PodUID, Name: li.PodName, Namespace: li.PodNamespace}
			pods[li.PodUID] = p
		}
		return p
	}
	for _, s := range sandboxes {
		li := kc.ReadLabels(s.Labels, nil)
		if li.PodUID == "" {
			continue
		}
		p := get(li)
		st := kc.ContainerStateExited
		if s.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			st = kc.ContainerStateRunning
		}
		p.Sandboxes = append(p.Sandboxes, &kc.Container{ID: s.Id, Name: kc.SandboxContainerName, State: st, SandboxID: s.Id, CreatedAt: s.CreatedAt})
	}
	for _, c := range containers {
		li := kc.ReadLabels(c.Labels, c.Annotations)
		if li.PodUID == "" {
			continue
		}
		get(li).Containers = append(get(li).Containers, &kc.Container{
			ID: c.Id, Name: c.GetMetadata().GetName(), Image: c.GetImage().GetImage(), ImageRef: c.ImageRef,
			Hash: li.Hash, State: criconv.ContainerStateFromCRI(c.State), SandboxID: c.PodSandboxId, CreatedAt: c.CreatedAt,
		})
	}
	out := make([]*kc.Pod, 0, len(pods))
	for _, p := range pods {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// GetPodStatus reads the status of every sandbox and container of the pod
// with this UID, newest first, and the IPs of its newest ready sandbox.
//
// The sandboxes and the containers are read at the same time (the
// kubelet reads one after the other): on a node whose runtime is busy
// each CRI call waits its turn, and a pod's status read back after its
// container started is what its running status waits for (#34). Either
// order can see a container whose sandbox it does not list, or the
// reverse; a status read later settles it, as the kubelet's does.
func (m *Manager) GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*kc.PodStatus, error) {
	sel := map[string]string{kc.LabelPodUID: string(uid)}
	ps := &kc.PodStatus{ID: uid, Name: name, Namespace: namespace}
	read := make(chan error, 1)
	go func() {
		var err error
		ps.SandboxStatuses, ps.IPs, err = m.sandboxStatuses(ctx, sel)
		read <- err
	}()
	containers, err := m.containerStatuses(ctx, sel)
	if err := cmp.Or(<-read, err); err != nil {
		return nil, err
	}
	ps.ContainerStatuses = containers
	return ps, nil
}

// sandboxStatuses reads the status of every sandbox matching sel, newest
// first, and the IPs of the newest if it is ready.
func (m *Manager) sandboxStatuses(ctx context.Context, sel map[string]string) ([]*kc.SandboxStatus, []string, error) {
	sandboxes, err := m.cfg.Runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		return nil, nil, err
	}
	sort.Slice(sandboxes, func(i, j int) bool { return sandboxes[i].CreatedAt > sandboxes[j].CreatedAt })
	var out []*kc.SandboxStatus
	var ips []string
	for i, s := range sandboxes {
		r, err := m.cfg.Runtime.PodSandboxStatus(ctx, s.Id, false)
		if errors.Is(err, runtime.ErrNotFound) {
			continue // removed between list and status
		}
		if err != nil {
			return nil, nil, err
		}
		sb := criconv.SandboxStatusFromCRI(r.Status)
		out = append(out, sb)
		if i == 0 && sb.Ready() {
			ips = sb.IPs
		}
	}
	return out, ips, nil
}

// containerStatuses reads the status of every container matching sel,
// newest first.
func (m *Manager) containerStatuses(ctx context.Context, sel map[string]string) ([]*kc.ContainerStatus, error) {
	containers, err := m.cfg.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	var out []*kc.ContainerStatus
	for _, c := range containers {
		r, err := m.cfg.Runtime.ContainerStatus(ctx, c.Id, false)
		if errors.Is(err, runtime.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		cs := criconv.ContainerStatusFromCRI(r.Status, c.PodSandboxId)
		addTerminationMessage(r.Status, cs)
		out = append(out, cs)
	}
	kc.SortNewestFirst(out)
	return out, nil
}

// gracePeriod is the kubelet's setTerminationGracePeriod: the pod's
// deletion grace period if it is being deleted, else its
// terminationGracePeriodSeconds (default 30), or, for a kill caused by a
// failed liveness or startup probe, the probe's own grace period if set. A
// pod that is gone is read from the container's annotations.
func gracePeriod(pod *v1.Pod, c *v1.Container, li kc.LabelInfo, reason KillReason) int64 {
	g := int64(v1.DefaultTerminationGracePeriodSeconds)
	switch {
	case pod == nil:
		if li.GracePeriod != nil {
			g = *li.GracePeriod
		}
		return g
	case pod.DeletionGracePeriodSeconds != nil:
		return *pod.DeletionGracePeriodSeconds
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		g = *pod.Spec.TerminationGracePeriodSeconds
	}
	if c != nil {
		var probe *v1.Probe
		switch reason {
		case KillReasonLivenessProbe:
			probe = c.LivenessProbe
		case KillReasonStartupProbe:
			probe = c.StartupProbe
		}
		if probe != nil && probe.TerminationGracePeriodSeconds != nil {
			g = *probe.TerminationGracePeriodSeconds
		}
	}
	return g
}

func (m *Manager) log() logr.Logger { return m.cfg.Log }

// fmtPod is the kubelet's format.Pod: name_namespace(uid), as its messages show it.
func fmtPod(pod *v1.Pod) string { return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID) }
