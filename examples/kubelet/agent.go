package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/nodekit-dev/nodekit/admission"
	"github.com/nodekit-dev/nodekit/cgroupmgr"
	"github.com/nodekit-dev/nodekit/eviction"
	"github.com/nodekit-dev/nodekit/gc"
	"github.com/nodekit-dev/nodekit/nodestatus"
	"github.com/nodekit-dev/nodekit/pleg"
	"github.com/nodekit-dev/nodekit/pleg/plegmetrics"
	"github.com/nodekit-dev/nodekit/podpath"
	"github.com/nodekit-dev/nodekit/podsource"
	"github.com/nodekit-dev/nodekit/podstatus"
	"github.com/nodekit-dev/nodekit/podsync"
	"github.com/nodekit-dev/nodekit/podworkers"
	"github.com/nodekit-dev/nodekit/prober"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
	"github.com/nodekit-dev/nodekit/server"
	"github.com/nodekit-dev/nodekit/statuscache"
	"github.com/nodekit-dev/nodekit/volume"
)

// The kubelet's housekeeping period; nodeLabel marks
// this agent's sandboxes with its node name (see runtime's OwnPodsOnly).
const (
	housekeepingPeriod = 2 * time.Second
	nodeLabel          = "nodekit.dev/node"
)

type agent struct {
	cfg         config
	log         logr.Logger
	clock       clock.WithTicker
	criClient   *runtime.Client
	mgr         *runtime.Manager
	cache       *statuscache.Cache
	pleg        pleg.PLEG
	prober      *prober.Manager
	cgroups     *cgroupmgr.Manager // nil: --cgroups-per-qos=false
	workers     *podworkers.Workers
	syncer      *podsync.Syncer
	statuses    *podstatus.Manager
	mux         *podsource.Mux
	sources     []podsource.Source
	registry    *prometheus.Registry
	api         *server.Handler // the API on --port, behind authentication and authorization
	readOnly    *server.Handler // the read-only subset on --read-only-port
	summary     *server.SummaryProvider
	runtimeName string           // "containerd"
	node        *nodestatus.Node // the Node's description, registered in cluster mode
	cluster     *cluster         // nil: standalone
	dispatcher  *podsync.Dispatcher
	containerGC *gc.ContainerGC
	imageGC     *gc.ImageGC
	eviction    *eviction.Manager
}

// newAgent wires the packages over a connected runtime client.
func newAgent(ctx context.Context, cfg config, log logr.Logger, client *runtime.Client) (*agent, *prometheus.Registry, error) {
	clk := clock.RealClock{}
	a := &agent{cfg: cfg, log: log, clock: clk, criClient: client, cache: statuscache.New(), registry: prometheus.NewRegistry(),
		statuses: podstatus.NewManager(clk), runtimeName: "cri"}
	if v, err := client.Version(ctx, runtime.CRIVersion); err == nil {
		a.runtimeName = v.RuntimeName
	}
	plegMetrics, proberMetrics, srcMetrics := plegmetrics.New(), prober.NewMetrics(), podsource.NewMetrics()
	syncMetrics, podMetrics := runtime.NewSyncMetrics(), podsync.NewMetrics()
	a.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		plegMetrics, srcMetrics, syncMetrics, podMetrics)
	probeRegistry := prometheus.NewRegistry() // /metrics/probes, as the kubelet's
	probeRegistry.MustRegister(proberMetrics)
	var recorder runtime.EventRecorder
	var objects runtime.Objects
	var nodeRecorder nodestatus.EventRecorder
	plugins := []volume.Plugin{volume.EmptyDir{}, volume.HostPath{}, volume.DownwardAPI{NodeAllocatable: a.allocatable}}
	if cfg.kubeconfig != "" {
		var err error
		if a.cluster, err = newCluster(ctx, cfg); err != nil {
			return nil, nil, err
		}
		recorder, objects, nodeRecorder = a.cluster.recorder, a.cluster.objects, a.cluster.recorder
		plugins = append(plugins, volume.ConfigMap{Objects: a.cluster.objects}, volume.Secret{Objects: a.cluster.objects},
			volume.Projected{Objects: a.cluster.objects, Tokens: a.cluster.tokens, NodeAllocatable: a.allocatable})
	} else {
		plugins = append(plugins, volume.Projected{NodeAllocatable: a.allocatable}) // downwardAPI sources only
	}
	layout := podpath.Layout{RootDir: cfg.rootDir, PodLogsDir: cfg.podLogsDir}
	volumes, err := volume.New(volume.Config{Layout: layout, Plugins: plugins})
	if err != nil {
		return nil, nil, err
	}
	if a.mgr, err = runtime.NewManager(runtime.ManagerConfig{Runtime: client, Images: client, PodLogsDir: cfg.podLogsDir, RootDir: cfg.rootDir,
		SandboxLabels: map[string]string{nodeLabel: cfg.hostname}, OwnPodsOnly: true,
		HostIP: cfg.hostIP, Mounts: volumes.Mounts, Streaming: client, Recorder: recorder, Objects: objects, NodeAllocatable: a.allocatable,
		Metrics: syncMetrics, Log: log.WithName("runtime"), SingleProcessOOMKill: cfg.singleProcessOOMKill,
		CgroupV2: a.runtimeName != fake.RuntimeName && cgroupmgr.HostMode() == cgroupmgr.ModeV2}); err != nil {
		return nil, nil, err
	}
	if a.pleg, err = pleg.NewGeneric(pleg.Config{Runtime: a.mgr, Cache: a.cache, Clock: clk, RelistPeriod: cfg.relistPeriod,
		Metrics: plegMetrics, Log: log.WithName("pleg")}); err != nil {
		return nil, nil, err
	}
	if a.prober, err = prober.New(prober.Config{Statuses: a.cache, Exec: client, HostIP: cfg.hostIP, Clock: clk, Recorder: recorder,
		Metrics: proberMetrics, Log: log.WithName("prober")}); err != nil {
		return nil, nil, err
	}
	if cfg.cgroupsPerQOS && a.runtimeName != fake.RuntimeName {
		driver := cgroupmgr.DriverCgroupfs
		if cfg.cgroupDriver == "systemd" {
			driver = cgroupmgr.DriverSystemd
		}
		if a.cgroups, err = cgroupmgr.New(cgroupmgr.Config{CgroupRoot: cfg.cgroupRoot, Driver: driver}); err != nil {
			return nil, nil, fmt.Errorf("--cgroups-per-qos: %w", err)
		}
		if err := a.cgroups.EnsureQOSCgroups(); err != nil {
			return nil, nil, fmt.Errorf("QoS cgroups under %s: %w", cfg.cgroupRoot, err)
		}
	}
	syncCfg := podsync.Config{Runtime: a.mgr, Volumes: volumes, Prober: a.prober, Cache: a.cache, Statuses: a.statuses,
		Reasons: podstatus.NewReasonCache(), RuntimeName: a.runtimeName, HostIPs: []string{cfg.hostIP}, Metrics: podMetrics, Clock: clk,
		Log: log.WithName("sync")}
	a.summary = &server.SummaryProvider{NodeName: cfg.hostname, StartTime: clk.Now(), Pods: a, Containers: client, Clock: clk,
		Layout: &layout, Volumes: volumes, ImageFs: client}
	if a.cgroups != nil { // no typed nils in the interfaces
		syncCfg.Cgroups, a.summary.Cgroups = a.cgroups, a.cgroups
	}
	if a.cluster != nil {
		syncCfg.Mirrors = a.cluster.mirrors
	}
	if a.syncer, err = podsync.New(syncCfg); err != nil {
		return nil, nil, err
	}
	if a.workers, err = podworkers.New(podworkers.Config{Syncer: a.syncer, Cache: a.cache, Clock: clk,
		ResyncInterval: cfg.syncFrequency, OnDone: podMetrics.ObserveWork, Log: log.WithName("podworkers")}); err != nil {
		return nil, nil, err
	}
	a.mux = podsource.NewMux(podsource.MuxConfig{Clock: clk, Log: log.WithName("podsource"), Metrics: srcMetrics})
	if err := a.newGC(ctx, client); err != nil {
		return nil, nil, err
	}
	if err := a.newEviction(client); err != nil {
		return nil, nil, err
	}
	if a.node, err = describeNode(ctx, cfg, client, a.runtimeName, a.pleg, a.eviction, nodeRecorder); err != nil {
		return nil, nil, err
	}
	predicate, err := admission.New(admission.Config{Node: a.admissionNode, Pods: a.workers, Log: log.WithName("admission")})
	if err != nil {
		return nil, nil, err
	}
	// The kubelet's order: the eviction manager's handler, then the
	// predicates (--max-pods is the node's allocatable pods there).
	dispatch := podsync.DispatchConfig{Workers: a.workers, Prober: a.prober, Statuses: a.statuses,
		Admit: []podsync.PodAdmitFunc{a.eviction.AdmitPod, predicate.Admit}, Log: log.WithName("pods")}
	if a.cluster != nil { // no typed nils in the interfaces
		dispatch.Mirrors, dispatch.Recorder = a.cluster.mirrors, a.cluster.recorder
	}
	if a.dispatcher, err = podsync.NewDispatcher(dispatch); err != nil {
		return nil, nil, err
	}
	file, err := podsource.NewFileSource(podsource.FileConfig{Path: cfg.manifestPath, NodeName: cfg.hostname,
		CheckPeriod: cfg.fileCheckFreq, Clock: clk, Log: log.WithName("file"), Metrics: srcMetrics}, a.mux)
	if err != nil {
		return nil, nil, err
	}
	a.sources = append(a.sources, file)
	if cfg.manifestURL != "" {
		url, err := podsource.NewURLSource(podsource.URLConfig{URL: cfg.manifestURL, NodeName: cfg.hostname,
			Clock: clk, Log: log.WithName("url"), Metrics: srcMetrics}, a.mux)
		if err != nil {
			return nil, nil, fmt.Errorf("--manifest-url: %w", err)
		}
		a.sources = append(a.sources, url)
	}
	if a.cluster != nil {
		if err := a.cluster.wire(a); err != nil {
			return nil, nil, err
		}
	}
	for _, s := range a.sources {
		a.mux.Register(s.Name())
	}
	checks := []server.Check{{Name: "pleg", Check: func(context.Context) error { _, err := a.pleg.Healthy(); return err }},
		{Name: "runtime", Check: client.CheckReady}}
	// The kubelet's read-only port: no logs, no streams, no debugging.
	if a.readOnly, err = server.New(server.Config{Pods: a, Stats: a.summary, Metrics: a.registry, ProbeMetrics: probeRegistry,
		Checks: checks}); err != nil {
		return nil, nil, err
	}
	a.api, err = server.New(server.Config{Pods: a, Logs: server.LogLocatorFunc(a.logPath), Stats: a.summary, Streams: a.mgr,
		Metrics: a.registry, ProbeMetrics: probeRegistry, EnableDebuggingHandlers: cfg.debugHandlers, Clock: clk, Checks: checks})
	return a, a.registry, err
}

// run drives the agent until ctx ends: source updates, lifecycle events
// and probe results reach the pod workers; housekeeping ticks; container
// and image GC and the eviction manager run on their own.
func (a *agent) run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, src := range a.sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := src.Run(ctx); ctx.Err() == nil {
				a.logError(err, "pod source stopped")
			}
		}()
	}
	for _, run := range []func(context.Context) error{a.pleg.Run, a.prober.Run, a.workers.Run, a.containerGC.Run, a.imageGC.Run,
		a.eviction.Run} {
		wg.Add(1)
		go func() { defer wg.Done(); a.logError(run(ctx), "run") }()
	}
	if a.cluster != nil {
		a.cluster.run(ctx, a, &wg)
	}
	housekeeping := a.clock.NewTicker(housekeepingPeriod)
	defer housekeeping.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case u := <-a.mux.Updates():
			a.apply(u)
		case ev, ok := <-a.pleg.Watch(): // closed once ctx ends
			if ok {
				a.workers.Sync(ev.ID)
			}
		case u := <-a.prober.Liveness().Updates(): // a closed channel's zero Update syncs nobody
			a.workers.Sync(u.PodUID)
		case u := <-a.prober.Readiness().Updates():
			a.workers.Sync(u.PodUID)
		case u := <-a.prober.Startup().Updates():
			a.workers.Sync(u.PodUID)
		case <-housekeeping.C(): // only once every source has delivered: no pod is taken for an orphan
			if a.mux.AllSourcesReady() {
				a.logError(a.syncer.Housekeeping(ctx, a.workers), "housekeeping")
				a.statuses.RemoveOrphans(a.keptStatuses())
			}
		}
	}
	wg.Wait()
	if a.cluster != nil {
		a.cluster.close()
	}
}

// apply hands a source update to the workers and keeps the QoS cgroups'
// limits to the pods admitted.
func (a *agent) apply(u podsource.PodUpdate) {
	a.dispatcher.Dispatch(u)
	if a.cgroups != nil {
		a.logError(a.cgroups.UpdateQOSCgroups(a.workers.Pods()), "updating QoS cgroups")
	}
}

// keptStatuses are the pods whose statuses matter: the workers' and those
// the sources still have (an API pod's final status, until it is deleted).
func (a *agent) keptStatuses() map[types.UID]bool {
	keep := a.workers.Known()
	for _, p := range a.mux.Pods() {
		keep[p.UID] = true
	}
	return keep
}

func (a *agent) logError(err error, msg string) {
	if err != nil {
		a.log.Error(err, msg)
	}
}

// Pods are the pods the node has from its sources (finished ones
// included), by name, with their statuses: the API server's PodLister.
func (a *agent) Pods() []v1.Pod {
	pods := a.statuses.PodsOf(a.workers.SourcePods())
	sort.Slice(pods, func(i, j int) bool { return pods[i].Namespace+"/"+pods[i].Name < pods[j].Namespace+"/"+pods[j].Name })
	return pods
}

// logPath finds a container's log file for /containerLogs.
func (a *agent) logPath(ctx context.Context, ns, name, container string, previous bool) (string, error) {
	for _, p := range a.workers.SourcePods() {
		if p.Namespace == ns && p.Name == name {
			return a.mgr.ContainerLogPath(ctx, p.UID, name, ns, container, previous)
		}
	}
	return "", fmt.Errorf("pod %s/%s not found", ns, name)
}
