package nodeagent

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/allocation"
	"github.com/nodekit-dev/nodekit/cadvisor"
	"github.com/nodekit-dev/nodekit/cgroupmgr"
	"github.com/nodekit-dev/nodekit/containerlog"
	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/oomwatch"
	"github.com/nodekit-dev/nodekit/pleg"
	"github.com/nodekit-dev/nodekit/pleg/plegmetrics"
	"github.com/nodekit-dev/nodekit/podpath"
	"github.com/nodekit-dev/nodekit/podsource"
	"github.com/nodekit-dev/nodekit/podstartup"
	"github.com/nodekit-dev/nodekit/podstatus"
	"github.com/nodekit-dev/nodekit/podsync"
	"github.com/nodekit-dev/nodekit/podworkers"
	"github.com/nodekit-dev/nodekit/prober"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/server"
	"github.com/nodekit-dev/nodekit/userns"
	"github.com/nodekit-dev/nodekit/volume"
)

// metrics are the parts' metrics, registered with Config.Registerer (the
// prober's with ProbeRegisterer: /metrics/probes, as the kubelet's).
type metrics struct {
	pleg    *plegmetrics.Metrics
	prober  *prober.Metrics
	sources *podsource.Metrics
	sync    *kuberuntime.SyncMetrics
	pods    *podsync.Metrics
	startup *podstartup.Tracker
}

func newMetrics(cfg Config) (*metrics, error) {
	m := &metrics{pleg: plegmetrics.New(), prober: prober.NewMetrics(), sources: podsource.NewMetrics(),
		sync: kuberuntime.NewSyncMetrics(), pods: podsync.NewMetrics(),
		startup: podstartup.New(podstartup.Config{Clock: cfg.Clock, Log: cfg.Log.WithName("podstartup")})}
	if err := register(cfg.Registerer, m.pleg, m.sources, m.sync, m.pods, m.startup); err != nil {
		return nil, err
	}
	if err := register(cfg.ProbeRegisterer, m.prober); err != nil {
		return nil, err
	}
	return m, nil
}

// layout is where the pods' directories and logs are.
func (a *Agent) layout() podpath.Layout {
	return podpath.Layout{RootDir: a.cfg.RootDir, PodLogsDir: a.cfg.PodLogsDir}
}

// volumePlugins are the kubelet's volume plugins; ConfigMaps, Secrets,
// service account tokens and persistent volume claims need the API server
// (Config.Client).
func (a *Agent) volumePlugins() []volume.Plugin {
	plugins := []volume.Plugin{volume.EmptyDir{NodeAllocatable: a.allocatable, PodMemoryLimit: podMemoryLimit}, volume.HostPath{},
		volume.DownwardAPI{NodeAllocatable: a.allocatable}, volume.Image{}}
	if a.cluster == nil {
		return append(plugins, volume.Projected{NodeAllocatable: a.allocatable, PodMemoryLimit: podMemoryLimit}) // downwardAPI sources only
	}
	claims := &volume.PersistentVolumeClaim{Objects: a.cluster.objects, Node: a.admissionNode, Recorder: a.cluster.recorder}
	if a.cluster.csiVolumes != nil { // no typed nils in the interfaces
		claims.CSI = a.cluster.csiVolumes
		plugins = append(plugins, volume.CSIInline{CSI: a.cluster.csiVolumes})
	}
	return append(plugins, claims,
		volume.ConfigMap{Objects: a.cluster.objects}, volume.Secret{Objects: a.cluster.objects,
			NodeAllocatable: a.allocatable, PodMemoryLimit: podMemoryLimit},
		volume.Projected{Objects: a.cluster.objects, Tokens: a.cluster.tokens, NodeAllocatable: a.allocatable,
			PodMemoryLimit: podMemoryLimit})
}

// newRuntimeManager builds the pod-level runtime manager over the CRI
// client: this agent's sandboxes only, its volumes' mounts, and in cluster
// mode the API's Services, objects and events.
func (a *Agent) newRuntimeManager(volumes *volume.Manager, m *metrics) error {
	cfg, client := a.cfg, a.cfg.Runtime
	var err error
	a.userns, err = userns.New(userns.Config{Layout: a.layout(), IDsPerPod: uint32(cfg.UserNamespacesIDsPerPod), MaxPods: cfg.MaxPods,
		Handlers: userns.HandlersFunc(a.handlerSupportsUserNamespaces), Log: a.log.WithName("userns")})
	if err != nil {
		return fmt.Errorf("nodeagent: user namespaces: %w", err)
	}
	mc := kuberuntime.ManagerConfig{Runtime: client, Images: client, PodLogsDir: cfg.PodLogsDir, RootDir: cfg.RootDir,
		SandboxLabels: map[string]string{NodeLabel: cfg.NodeName}, OwnPodsOnly: true,
		HostIP: cfg.NodeIP, ClusterDomain: cfg.ClusterDomain, Mounts: volumes.ContainerMounts, Streaming: client,
		NodeAllocatable: a.allocatable, Metrics: m.sync, Startup: m.startup, Log: a.log.WithName("runtime"), SingleProcessOOMKill: cfg.SingleProcessOOMKill,
		CgroupV2: *cfg.RuntimeOnHost && cgroupmgr.HostMode() == cgroupmgr.ModeV2, UserNamespaces: a.userns,
		MaxParallelPodStarts: cfg.MaxParallelPodStarts}
	if *cfg.RuntimeOnHost {
		mc.ContainersLogDir = cfg.ContainersLogDir
	}
	if a.cluster != nil { // no typed nils in the interfaces
		mc.Services, mc.Recorder, mc.Objects = a.cluster.services, a.cluster.recorder, a.cluster.objects
		mc.PullSecrets = a.cluster.objects
	}
	a.mgr, err = kuberuntime.NewManager(mc)
	return err
}

// handlerSupportsUserNamespaces asks the runtime's status, as the kubelet
// asks the runtime state it keeps from it.
func (a *Agent) handlerSupportsUserNamespaces(handler string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := a.cfg.Runtime.Status(ctx, false)
	if err != nil {
		return false, fmt.Errorf("runtime status: %w", err)
	}
	return kuberuntime.HandlerSupportsUserNamespaces(st, handler)
}

// newPLEG builds the generic (relisting) PLEG, or the evented one.
func (a *Agent) newPLEG(m *metrics) error {
	cfg := pleg.Config{Runtime: a.mgr, Cache: a.cache, Clock: a.cfg.Clock, RelistPeriod: a.cfg.RelistPeriod,
		Metrics: m.pleg, Log: a.log.WithName("pleg")}
	var err error
	if a.cfg.EventedPLEG {
		a.pleg, err = pleg.NewEvented(pleg.EventedConfig{Config: cfg, Events: a.cfg.Runtime})
	} else {
		a.pleg, err = pleg.NewGeneric(cfg)
	}
	return err
}

// newProber builds the probe manager, which execs in containers through
// the runtime and probes host-network pods on NodeIP.
func (a *Agent) newProber(m *metrics) error {
	pc := prober.Config{Statuses: a.cache, Exec: a.cfg.Runtime, HostIP: a.cfg.NodeIP, Clock: a.cfg.Clock,
		Metrics: m.prober, Log: a.log.WithName("prober")}
	if a.cluster != nil {
		pc.Recorder = a.cluster.recorder
	}
	var err error
	a.prober, err = prober.New(pc)
	return err
}

// newCgroups makes the QoS cgroups, with CgroupsPerQOS and a runtime on
// this host.
func (a *Agent) newCgroups() error {
	cfg := a.cfg
	if !*cfg.CgroupsPerQOS || !*cfg.RuntimeOnHost {
		return nil
	}
	var err error
	if a.cgroups, err = cgroupmgr.New(cgroupmgr.Config{CgroupRoot: cfg.CgroupRoot, Driver: cfg.CgroupDriver}); err != nil {
		return fmt.Errorf("nodeagent: Config.CgroupsPerQOS: %w", err)
	}
	if err := a.cgroups.EnsureQOSCgroups(); err != nil {
		return fmt.Errorf("nodeagent: QoS cgroups under Config.CgroupRoot %q: %w", cfg.CgroupRoot, err)
	}
	return nil
}

// newHostWatchers builds what watches this host's side of the runtime's
// containers: log rotation and the OOM watcher (SystemOOM events on the
// Node in cluster mode, kills per cgroup for /metrics/cadvisor).
func (a *Agent) newHostWatchers() error {
	if !*a.cfg.RuntimeOnHost {
		return nil
	}
	if err := containerlog.MakeSymlinkDir(a.cfg.ContainersLogDir); err != nil {
		return fmt.Errorf("nodeagent: Config.ContainersLogDir: %w", err)
	}
	lc := a.cfg.ContainerLogs
	lc.Runtime, lc.Clock, lc.Log = ownContainers{a.cfg.Runtime, a.cfg.NodeName}, a.cfg.Clock, a.log.WithName("container-logs")
	var err error
	if a.logs, err = containerlog.NewManager(lc); err != nil {
		return fmt.Errorf("nodeagent: Config.ContainerLogs: %w", err)
	}
	oc := oomwatch.Config{Source: oomwatch.Kmsg{}, Clock: a.cfg.Clock, Log: a.log.WithName("oom")}
	if a.cluster != nil {
		oc.Recorder, oc.NodeRef = a.cluster.recorder, nodeRef(a.cfg.NodeName)
	}
	a.oom, err = oomwatch.New(oc)
	return err
}

// ownContainers lists only the containers of this agent's sandboxes, so
// that agents sharing a runtime rotate only their own logs.
type ownContainers struct {
	*runtime.Client
	node string
}

func (o ownContainers) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	sandboxes, err := o.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{NodeLabel: o.node}})
	if err != nil {
		return nil, err
	}
	own := make(map[string]bool, len(sandboxes))
	for _, s := range sandboxes {
		own[s.Id] = true
	}
	all, err := o.Client.ListContainers(ctx, filter)
	if err != nil {
		return nil, err
	}
	mine := all[:0]
	for _, c := range all {
		if own[c.PodSandboxId] {
			mine = append(mine, c)
		}
	}
	return mine, nil
}

// newCAdvisor builds /metrics/cadvisor's collector over the pod cgroups,
// when the agent has them.
func (a *Agent) newCAdvisor() error {
	if a.cgroups == nil {
		return nil
	}
	cc := cadvisor.Config{Runtime: a.cfg.Runtime, KubepodsCgroup: a.cgroups.Path(a.cgroups.KubepodsCgroupName()),
		CgroupV2: ptr.To(a.cgroups.Mode() == cgroupmgr.ModeV2), SandboxImage: a.sandboxImage,
		HousekeepingInterval: a.cfg.CAdvisorHousekeepingInterval, Clock: a.cfg.Clock, Log: a.log.WithName("cadvisor")}
	if a.oom != nil { // no typed nils in the interfaces
		cc.OOM = a.oom
	}
	var err error
	a.cadvisor, err = cadvisor.New(cc)
	if err != nil {
		return fmt.Errorf("nodeagent: Config.CAdvisorHousekeepingInterval: %w", err)
	}
	a.summary.CgroupStats = a.cadvisor // /stats/summary and /metrics/resource agree with /metrics/cadvisor
	return nil
}

// newPodSync builds what syncs pods: the syncer, the pod workers that call
// it, the sources' mux, and the Summary API's provider.
func (a *Agent) newPodSync(volumes *volume.Manager, m *metrics) error {
	cfg, clk := a.cfg, a.cfg.Clock
	sc := podsync.Config{Runtime: a.mgr, Volumes: volumes, Prober: a.prober, Cache: a.cache, Statuses: a.statuses,
		Reasons: podstatus.NewReasonCache(), RuntimeName: a.runtimeName, HostIPs: []string{cfg.NodeIP}, Metrics: m.pods, Clock: clk,
		Log: a.log.WithName("sync"), UserNamespaces: a.userns}
	layout := a.layout()
	a.summary = &server.SummaryProvider{NodeName: cfg.NodeName, StartTime: clk.Now(), Pods: a, Containers: cfg.Runtime, Clock: clk,
		Layout: &layout, Volumes: volumes, ImageFs: cfg.Runtime}
	if a.cgroups != nil { // no typed nils in the interfaces
		sc.Cgroups, a.summary.Cgroups = a.cgroups, a.cgroups
	}
	if a.cluster != nil {
		sc.Mirrors, sc.Recorder = a.cluster.mirrors, a.cluster.recorder
		// kubelet_volume_stats_*: only claims have them.
		if err := register(cfg.Registerer, server.NewVolumeStatsMetrics(a, volumes)); err != nil {
			return err
		}
	}
	var err error
	// Resizes are decided beside the active pods by the predicate, made
	// with the dispatcher, after this.
	fit := func(pod *v1.Pod, others []*v1.Pod) (bool, string, string) { return a.predicate.FitResize(pod, others) }
	acfg := allocation.Config{StateDir: cfg.RootDir, Fit: fit, Clock: clk, Log: a.log.WithName("allocation")}
	if a.cluster != nil {
		acfg.Recorder = a.cluster.recorder
	}
	if a.allocation, err = allocation.New(acfg); err != nil {
		return err
	}
	sc.Allocation = a.allocation
	if a.syncer, err = podsync.New(sc); err != nil {
		return err
	}
	if a.workers, err = podworkers.New(podworkers.Config{PodSyncer: a.syncer, Cache: a.cache, Clock: clk,
		ResyncInterval: cfg.SyncFrequency, OnDone: m.pods.ObserveWork, Log: a.log.WithName("podworkers")}); err != nil {
		return err
	}
	a.mux = podsource.NewMux(podsource.MuxConfig{Clock: clk, Log: a.log.WithName("podsource"), Metrics: m.sources,
		Observer: m.startup})
	a.startup, a.podMetrics = m.startup, m.pods
	return nil
}
