package nodeagent

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"

	"github.com/nodekit-dev/nodekit/admission"
	"github.com/nodekit-dev/nodekit/allocation"
	"github.com/nodekit-dev/nodekit/cadvisor"
	"github.com/nodekit-dev/nodekit/cgroupmgr"
	"github.com/nodekit-dev/nodekit/containerlog"
	"github.com/nodekit-dev/nodekit/csi"
	"github.com/nodekit-dev/nodekit/eviction"
	"github.com/nodekit-dev/nodekit/gc"
	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/nodestatus"
	"github.com/nodekit-dev/nodekit/oomwatch"
	"github.com/nodekit-dev/nodekit/pleg"
	"github.com/nodekit-dev/nodekit/podsource"
	"github.com/nodekit-dev/nodekit/podstartup"
	"github.com/nodekit-dev/nodekit/podstatus"
	"github.com/nodekit-dev/nodekit/podsync"
	"github.com/nodekit-dev/nodekit/podworkers"
	"github.com/nodekit-dev/nodekit/prober"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/server"
	"github.com/nodekit-dev/nodekit/statuscache"
	"github.com/nodekit-dev/nodekit/userns"
	"github.com/nodekit-dev/nodekit/volume"
)

// HousekeepingPeriod is the kubelet's (orphaned pods and statuses);
// NodeLabel marks an agent's sandboxes with its node name (see runtime's
// OwnPodsOnly), so agents can share a runtime.
const (
	HousekeepingPeriod = 2 * time.Second
	NodeLabel          = "nodekit.dev/node"
)

// Agent is one node agent: nodekit's packages composed as the kubelet
// composes its own, over one runtime client.
type Agent struct {
	cfg          Config
	log          logr.Logger
	mgr          *kuberuntime.Manager
	cache        *statuscache.Cache
	pleg         pleg.PLEG
	prober       *prober.Manager
	cgroups      *cgroupmgr.Manager    // nil: CgroupsPerQOS off or the runtime not on this host
	cadvisor     *cadvisor.Collector   // nil when cgroups is
	logs         *containerlog.Manager // nil: RuntimeOnHost false
	oom          *oomwatch.Watcher     // nil: RuntimeOnHost false
	workers      *podworkers.Workers
	syncer       *podsync.Syncer
	allocation   *allocation.Manager
	userns       *userns.Manager
	predicate    *admission.Predicate // the resize fit of allocation
	statuses     *podstatus.Manager
	mux          *podsource.Mux
	sources      []podsource.Source
	files        *podsource.FileSource // nil: no ManifestPath
	api          *server.Handler       // the kubelet's API, for the caller to serve behind authn/authz
	readOnly     *server.Handler       // its read-only subset
	summary      *server.SummaryProvider
	runtimeName  string              // "containerd"
	cgroupV1     bool                // the runtime's containers are in this host's cgroup v1
	node         *nodestatus.Builder // the Node's description, registered in cluster mode
	cluster      *cluster            // nil: standalone
	dispatcher   *podsync.Dispatcher
	startup      *podstartup.Tracker // the pod startup SLI: the mux and the status writer tell it
	podMetrics   *podsync.Metrics    // the status writer tells it how long statuses took to sync
	containerGC  *gc.ContainerGC
	imageGC      *gc.ImageGC
	sandboxImage string            // the runtime's pause image
	eviction     *eviction.Manager // nil: Config.Eviction nil
	ran          atomic.Bool
	// sourcesReady: every source's first set dispatched (sourcesApplied).
	sourcesReady atomic.Bool
}

// New composes an agent over cfg.Runtime; nothing runs until Run. The
// runtime is asked for its name and sandbox image, and the host for its
// machine facts unless cfg.Machine is set. It reads as the list of the
// agent's parts, each made by its own constructor, in the order they need
// each other.
func New(ctx context.Context, cfg Config) (_ *Agent, err error) {
	if cfg, err = cfg.withDefaults(); err != nil {
		return nil, err
	}
	cgroupV1 := *cfg.RuntimeOnHost && cgroupmgr.HostMode() != cgroupmgr.ModeV2
	if cgroupV1 && *cfg.FailCgroupV1 {
		return nil, fmt.Errorf("nodeagent: Config.FailCgroupV1 (failCgroupV1, --fail-cgroupv1) is true: %w", ErrCgroupV1)
	}
	a := &Agent{cfg: cfg, cgroupV1: cgroupV1, log: cfg.Log, cache: statuscache.New(), statuses: podstatus.NewManager(cfg.Clock), runtimeName: "cri"}
	defer func() {
		if err != nil && a.cluster != nil {
			a.cluster.close() // its CSI drivers' connections
		}
	}()
	if v, err := cfg.Runtime.Version(ctx, runtime.CRIVersion); err == nil {
		a.runtimeName = v.RuntimeName
	}
	m, err := newMetrics(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Client != nil {
		if a.cluster, err = newCluster(cfg); err != nil {
			return nil, err
		}
	}
	volumes, err := volume.New(volume.Config{Layout: a.layout(), Plugins: a.volumePlugins()})
	if err != nil {
		return nil, err
	}
	for _, part := range []func() error{
		func() error { return a.newRuntimeManager(volumes, m) },
		func() error { return a.newPLEG(m) },
		func() error { return a.newProber(m) },
		a.newCgroups,
		func() error { return a.newPodSync(volumes, m) },
		func() error { return a.newGC(ctx) },
		a.newHostWatchers,
		a.newCAdvisor,
		a.newEviction,
		func() (err error) { a.node, err = a.describeNode(ctx); return err },
		a.newDispatcher,
		func() error { return a.newSources(m.sources) },
		a.newHandlers,
	} {
		if err := part(); err != nil {
			return nil, err
		}
	}
	return a, nil
}

func register(r prometheus.Registerer, cs ...prometheus.Collector) error {
	if r == nil {
		return nil
	}
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			return fmt.Errorf("nodeagent: Config.Registerer: %w", err)
		}
	}
	return nil
}

// newDispatcher admits source updates in the kubelet's order: the
// eviction manager's handler, the sysctl allowlist, then the predicates
// (MaxPods is the node's allocatable pods there).
func (a *Agent) newDispatcher() error {
	predicate, err := admission.New(admission.Config{Node: a.admissionNode, Pods: a.workers, Log: a.log.WithName("admission")})
	if err != nil {
		return err
	}
	a.predicate = predicate
	sysctls, err := admission.NewSysctls(a.cfg.AllowedUnsafeSysctls)
	if err != nil {
		return fmt.Errorf("nodeagent: Config.AllowedUnsafeSysctls: %w", err)
	}
	var admit []admission.PodAdmitHandler
	if a.eviction != nil {
		admit = append(admit, a.eviction)
	}
	dispatch := podsync.DispatchConfig{Workers: a.workers, Prober: a.prober, Statuses: a.statuses,
		Admit: append(admit, sysctls, predicate), Allocation: a.allocation, ActivePods: a.workers, Log: a.log.WithName("pods")}
	if a.cluster != nil { // no typed nils in the interfaces
		dispatch.Mirrors, dispatch.Recorder = a.cluster.mirrors, a.cluster.recorder
	}
	a.dispatcher, err = podsync.NewDispatcher(dispatch)
	return err
}

// newSources builds the static sources and, in cluster mode, the API
// server's; each is registered with the mux, which holds housekeeping
// back until all have delivered.
func (a *Agent) newSources(m *podsource.Metrics) error {
	cfg := a.cfg
	if cfg.ManifestPath != "" {
		file, err := podsource.NewFileSource(podsource.FileConfig{Path: cfg.ManifestPath, NodeName: cfg.NodeName,
			CheckPeriod: cfg.FileCheckFrequency, Clock: cfg.Clock, Log: a.log.WithName("file"), Metrics: m}, a.mux)
		if err != nil {
			return fmt.Errorf("nodeagent: Config.ManifestPath: %w", err)
		}
		a.files, a.sources = file, append(a.sources, file)
	}
	if cfg.ManifestURL != "" {
		url, err := podsource.NewURLSource(podsource.URLConfig{URL: cfg.ManifestURL, NodeName: cfg.NodeName,
			Clock: cfg.Clock, Log: a.log.WithName("url"), Metrics: m}, a.mux)
		if err != nil {
			return fmt.Errorf("nodeagent: Config.ManifestURL: %w", err)
		}
		a.sources = append(a.sources, url)
	}
	if a.cluster != nil {
		if err := a.cluster.wire(a); err != nil {
			return err
		}
	}
	for _, s := range a.sources {
		a.mux.Register(s.Name())
	}
	return nil
}

// newHandlers builds the kubelet's HTTP API and its read-only subset (no
// logs, no streams, no debugging); the caller serves them.
func (a *Agent) newHandlers() error {
	checks := []server.HealthCheck{{Name: "pleg", Check: func(context.Context) error { _, err := a.pleg.Healthy(); return err }},
		{Name: "runtime", Check: a.cfg.Runtime.CheckReady}}
	var err error
	var cadvisorMetrics http.Handler
	if a.cadvisor != nil { // no typed nils in the interfaces
		cadvisorMetrics = a.cadvisor
	}
	if a.readOnly, err = server.New(server.Config{Pods: a, Stats: a.summary, Metrics: a.cfg.Gatherer, ProbeMetrics: a.cfg.ProbeGatherer,
		CAdvisorMetrics: cadvisorMetrics, Checks: checks}); err != nil {
		return err
	}
	a.api, err = server.New(server.Config{Pods: a, Logs: server.LogLocatorFunc(a.LogPath), Stats: a.summary, Streams: a.mgr,
		Metrics: a.cfg.Gatherer, ProbeMetrics: a.cfg.ProbeGatherer, CAdvisorMetrics: cadvisorMetrics,
		EnableDebuggingHandlers: *a.cfg.EnableDebuggingHandlers, Clock: a.cfg.Clock, Checks: checks})
	return err
}

// Pods are the pods the node has from its sources (finished ones
// included), by name, with their statuses: the API server's PodLister.
func (a *Agent) Pods() []v1.Pod {
	pods := a.statuses.PodsOf(a.workers.SourcePods())
	sort.Slice(pods, func(i, j int) bool { return pods[i].Namespace+"/"+pods[i].Name < pods[j].Namespace+"/"+pods[j].Name })
	return pods
}

// LogPath finds a container's log file for /containerLogs.
func (a *Agent) LogPath(ctx context.Context, ns, name, container string, previous bool) (string, error) {
	for _, p := range a.workers.SourcePods() {
		if p.Namespace == ns && p.Name == name {
			return a.mgr.ContainerLogPath(ctx, p.UID, name, ns, container, previous)
		}
	}
	return "", fmt.Errorf("pod %s/%s not found", ns, name)
}

// APIHandler is the kubelet's API (pods, logs, exec, stats, metrics,
// healthz, debugging): serve it behind authentication and authorization.
func (a *Agent) APIHandler() *server.Handler { return a.api }

// ReadOnlyHandler is the kubelet's read-only port's subset of it.
func (a *Agent) ReadOnlyHandler() *server.Handler { return a.readOnly }

// Runtime is the pod-level runtime manager (this node's pods only).
func (a *Agent) Runtime() *kuberuntime.Manager { return a.mgr }

// RuntimeName is the runtime's name, as its Version says ("containerd").
func (a *Agent) RuntimeName() string { return a.runtimeName }

// Summary is the Summary API's provider (/stats/summary).
func (a *Agent) Summary() *server.SummaryProvider { return a.summary }

// CSIDrivers are the CSI drivers registered through the plugin registry
// (<root-dir>/plugins_registry); nil without an API server or
// RuntimeOnHost.
func (a *Agent) CSIDrivers() *csi.Registry {
	if a.cluster == nil {
		return nil
	}
	return a.cluster.csiDrivers
}

// Cgroups is the QoS and pod cgroup manager; nil without CgroupsPerQOS.
func (a *Agent) Cgroups() *cgroupmgr.Manager { return a.cgroups }

// Statuses is the status manager: every pod's latest API status.
func (a *Agent) Statuses() *podstatus.Manager { return a.statuses }

// ContainerGC is the dead container collector (it runs on its own in Run).
func (a *Agent) ContainerGC() *gc.ContainerGC { return a.containerGC }

// FileSource is the ManifestPath source (its refused manifests); nil
// without one.
func (a *Agent) FileSource() *podsource.FileSource { return a.files }

// AllSourcesReady says whether every pod source has delivered once and
// its pods have reached the workers: before that no pod is taken for an
// orphan. It turns true on Run's first housekeeping after.
func (a *Agent) AllSourcesReady() bool { return a.sourcesReady.Load() }
