// Command kubelet is nodekit's reference node agent. This early version runs
// static pods in the kubelet's standalone mode: it reads manifests from
// --pod-manifest-path and keeps their containers running through the runtime
// package's Manager, on containerd or on an in-process fake runtime.
//
// It composes the packages as the kubelet does: one pod worker per pod,
// synced when its manifest changes, when the PLEG sees its containers change
// (through the status cache), when a probe result changes, and every
// --sync-frequency; liveness and startup failures restart containers, and
// readiness drives the pod's Ready condition. It serves /healthz on
// --healthz-port and /pods, /healthz, /metrics, /stats/summary,
// /containerLogs and (--enable-debugging-handlers) /debug/pprof on --port,
// both on 127.0.0.1. Pods come from --pod-manifest-path (and
// --manifest-url) through package podsource; with --cgroups-per-qos (and a
// real runtime) each pod gets its QoS-class cgroup from package cgroupmgr.
//
// As the kubelet: a static pod's new version (an edited manifest gives a new
// UID) starts only once the old one is gone; housekeeping (every 2s) kills
// and removes pods that no source wants any more, such as one whose
// manifest was deleted while the agent was down. Unlike the kubelet, it
// only touches sandboxes labelled nodekit.dev/node=<node name>, so agents
// sharing a runtime leave each other's pods alone; and it publishes a pod's
// status right after a sync that started or stopped something, instead of
// waiting for the next relist.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/nodekit-dev/nodekit/cgroupmgr"
	"github.com/nodekit-dev/nodekit/pleg"
	"github.com/nodekit-dev/nodekit/podpath"
	"github.com/nodekit-dev/nodekit/podsource"
	"github.com/nodekit-dev/nodekit/prober"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
	"github.com/nodekit-dev/nodekit/statuscache"
	"github.com/nodekit-dev/nodekit/volume"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

type config struct {
	runtimeKind       string
	endpoint          string
	manifestPath      string
	hostname          string
	hostIP            string
	relistPeriod      time.Duration
	syncFrequency     time.Duration
	fileCheckFreq     time.Duration
	podLogsDir        string
	fakeServesPorts   bool
	healthzPort, port int
	manifestURL       string
	cgroupsPerQOS     bool
	cgroupRoot        string
	cgroupDriver      string
	maxPods           int
	rootDir           string
	imageEndpoint     string
	debugHandlers     bool
}

// housekeepingPeriod is the kubelet's housekeeping interval.
const housekeepingPeriod = 2 * time.Second

// containerGCPeriod is the kubelet's ContainerGCPeriod.
const containerGCPeriod = time.Minute

// gcPercent is the agent's GOGC unless the environment sets one. Its live
// heap is small (about 7 MB with 110 pods) and a collection costs well under
// a millisecond of CPU, so collecting twice as often as Go's default keeps
// several megabytes of garbage out of the node's memory for a negligible
// CPU cost.
const gcPercent = 50

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubelet:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, log); err != nil && !errors.Is(err, context.Canceled) {
		log.Error("agent stopped", "error", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("kubelet", flag.ContinueOnError)
	host, _ := os.Hostname()
	cfg := config{}
	fs.StringVar(&cfg.runtimeKind, "runtime", "auto", "container runtime: auto (containerd if it answers, else fake), remote, or fake")
	fs.StringVar(&cfg.endpoint, "container-runtime-endpoint", runtime.DefaultRuntimeEndpoint, "CRI endpoint of the remote runtime")
	fs.StringVar(&cfg.imageEndpoint, "image-service-endpoint", "", "CRI image service endpoint (default: the runtime endpoint)")
	fs.StringVar(&cfg.manifestPath, "pod-manifest-path", "/etc/kubernetes/manifests", "directory of static pod manifests")
	fs.StringVar(&cfg.hostname, "hostname-override", host, "node name")
	fs.DurationVar(&cfg.relistPeriod, "relist-period", pleg.DefaultRelistPeriod, "PLEG relist period")
	fs.DurationVar(&cfg.syncFrequency, "sync-frequency", time.Minute, "max period between syncs of each pod")
	fs.DurationVar(&cfg.fileCheckFreq, "file-check-frequency", 20*time.Second, "how often the manifest directory is re-read")
	fs.IntVar(&cfg.healthzPort, "healthz-port", 10248, "port of the /healthz endpoint on 127.0.0.1 (0 disables)")
	fs.IntVar(&cfg.port, "port", 10250, "port of the agent's API (/pods, /healthz, /metrics) on 127.0.0.1 (0 disables)")
	fs.StringVar(&cfg.hostIP, "node-ip", "127.0.0.1", "the node's IP, reported for host-network pods and probed there")
	fs.StringVar(&cfg.manifestURL, "manifest-url", "", "URL polled for a Pod or PodList")
	fs.BoolVar(&cfg.cgroupsPerQOS, "cgroups-per-qos", true, "create the QoS and pod cgroup hierarchy (not with the fake runtime)")
	fs.StringVar(&cfg.cgroupRoot, "cgroup-root", "/", "parent of the kubepods cgroup")
	fs.StringVar(&cfg.cgroupDriver, "cgroup-driver", "cgroupfs", "cgroup naming: cgroupfs or systemd")
	fs.IntVar(&cfg.maxPods, "max-pods", 110, "pods this node runs at most; more are rejected")
	fs.StringVar(&cfg.rootDir, "root-dir", "/var/lib/kubelet", "directory for pod volumes")
	fs.BoolVar(&cfg.debugHandlers, "enable-debugging-handlers", true, "serve /debug/pprof/ on --port")
	configFile := fs.String("config", "", "a KubeletConfiguration file (kubelet.config.k8s.io/v1beta1); flags override it")
	fs.StringVar(&cfg.podLogsDir, "pod-logs-dir", runtime.DefaultPodLogsDir, "container log root")
	fs.BoolVar(&cfg.fakeServesPorts, "fake-host-ports", true, "with the fake runtime, really serve the test image's HTTP on host-network ports")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if *configFile != "" {
		if err := applyConfigFile(fs, &cfg, *configFile); err != nil {
			return cfg, err
		}
	}
	if cfg.maxPods <= 0 {
		return cfg, fmt.Errorf("--max-pods: invalid value %d: must be positive", cfg.maxPods)
	}
	switch cfg.runtimeKind {
	case "auto", "remote", "fake":
	default:
		return cfg, fmt.Errorf("--runtime: invalid value %q: want auto, remote or fake", cfg.runtimeKind)
	}
	if _, err := runtime.ParseEndpoint(cfg.endpoint); err != nil {
		return cfg, fmt.Errorf("--container-runtime-endpoint: %w", err)
	}
	if cfg.imageEndpoint != "" {
		if _, err := runtime.ParseEndpoint(cfg.imageEndpoint); err != nil {
			return cfg, fmt.Errorf("--image-service-endpoint: %w", err)
		}
	}
	for name, d := range map[string]time.Duration{"--relist-period": cfg.relistPeriod, "--sync-frequency": cfg.syncFrequency, "--file-check-frequency": cfg.fileCheckFreq} {
		if d <= 0 {
			return cfg, fmt.Errorf("%s: invalid value %s: must be positive", name, d)
		}
	}
	if cfg.cgroupDriver != "cgroupfs" && cfg.cgroupDriver != "systemd" {
		return cfg, fmt.Errorf("--cgroup-driver: invalid value %q: want cgroupfs or systemd", cfg.cgroupDriver)
	}
	for name, p := range map[string]int{"--healthz-port": cfg.healthzPort, "--port": cfg.port} {
		if p < 0 || p > 65535 {
			return cfg, fmt.Errorf("%s: invalid value %d: must be between 0 and 65535", name, p)
		}
	}
	cfg.hostname = strings.ToLower(cfg.hostname)
	return cfg, nil
}

func run(ctx context.Context, cfg config, slogger *slog.Logger) error {
	log := logr.FromSlogHandler(slogger.Handler())
	rtMetrics := runtime.NewMetrics()
	opts := []runtime.Option{runtime.WithMetrics(rtMetrics)}
	if cfg.imageEndpoint != "" {
		opts = append(opts, runtime.WithImageEndpoint(cfg.imageEndpoint))
	}
	client, closeRuntime, err := connect(ctx, cfg, slogger, opts...)
	if err != nil {
		return err
	}
	defer closeRuntime()
	a, registry, err := newAgent(ctx, cfg, log, client)
	if err == nil {
		registry.MustRegister(rtMetrics)
	}
	if err != nil {
		return err
	}
	slogger.Info("nodekit agent started", "node", cfg.hostname, "manifests", cfg.manifestPath, "runtime", a.runtimePrefix,
		"relistPeriod", cfg.relistPeriod, "syncFrequency", cfg.syncFrequency, "healthzPort", cfg.healthzPort, "port", cfg.port)
	stopServers, err := a.serve(cfg, registry)
	if err != nil {
		return err
	}
	defer stopServers()
	a.run(ctx)
	slogger.Info("shutting down; pods keep running in the runtime")
	return ctx.Err()
}

// newAgent wires the packages: status cache, PLEG, prober, runtime manager.
func newAgent(ctx context.Context, cfg config, log logr.Logger, client *runtime.Client) (*agent, *prometheus.Registry, error) {
	registry := prometheus.NewRegistry()
	// The Go runtime's and the process's own figures, as the kubelet serves.
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	plegMetrics, proberMetrics := pleg.NewMetrics(), prober.NewMetrics()
	registry.MustRegister(plegMetrics, proberMetrics)
	layout := podpath.Layout{RootDir: cfg.rootDir, PodLogsDir: cfg.podLogsDir}
	vols := volume.New(volume.Config{Layout: layout})
	mgr, err := runtime.NewManager(runtime.ManagerConfig{Runtime: client, Images: client, PodLogsDir: cfg.podLogsDir,
		SandboxLabels: map[string]string{nodeLabel: cfg.hostname},
		HostIP:        cfg.hostIP, Mounts: vols.Mounts, Log: log.WithName("runtime")})
	if err != nil {
		return nil, nil, err
	}
	cache := statuscache.New()
	clk := clock.RealClock{}
	p := pleg.NewGeneric(pleg.Config{Runtime: mgr, Cache: cache, Clock: clk, RelistPeriod: cfg.relistPeriod,
		Metrics: plegMetrics, Log: log.WithName("pleg")})
	pr, err := prober.New(prober.Config{Statuses: cache, Exec: client, HostIP: cfg.hostIP, Clock: clk,
		Metrics: proberMetrics, Log: log.WithName("prober")})
	if err != nil {
		return nil, nil, err
	}
	prefix := "cri://"
	if v, err := client.Version(ctx, runtime.CRIVersion); err == nil {
		prefix = v.RuntimeName + "://"
	}
	a := &agent{cfg: cfg, log: log, clock: clk, mgr: mgr, cache: cache, pleg: p, prober: pr, runtimePrefix: prefix, criClient: client, volumes: vols, layout: layout, started: clk.Now(), registry: registry,
		workers: map[types.UID]*podWorker{}, stopping: map[types.UID]*podWorker{}, orphans: map[types.UID]bool{}}
	if cfg.cgroupsPerQOS && prefix != "nodekit-fake://" {
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
	srcMetrics := podsource.NewMetrics()
	registry.MustRegister(srcMetrics)
	a.mux = podsource.NewMux(podsource.MuxConfig{Clock: clk, Log: log.WithName("podsource"), Metrics: srcMetrics})
	file, err := podsource.NewFileSource(podsource.FileConfig{Path: cfg.manifestPath, NodeName: cfg.hostname,
		CheckPeriod: cfg.fileCheckFreq, Clock: clk, Log: log.WithName("file"), Metrics: srcMetrics}, a.mux)
	if err != nil {
		return nil, nil, err
	}
	a.sources = append(a.sources, file)
	a.mux.Register(file.Name())
	if cfg.manifestURL != "" {
		url, err := podsource.NewURLSource(podsource.URLConfig{URL: cfg.manifestURL, NodeName: cfg.hostname,
			Clock: clk, Log: log.WithName("url"), Metrics: srcMetrics}, a.mux)
		if err != nil {
			return nil, nil, fmt.Errorf("--manifest-url: %w", err)
		}
		a.sources = append(a.sources, url)
		a.mux.Register(url.Name())
	}
	return a, registry, nil
}

// run drives the agent until ctx ends: the PLEG and the prober run in the
// background; their events and probe updates, the manifest re-reads and the
// periodic resync poke the pod workers.
func (a *agent) run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, src := range a.sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := src.Run(ctx); err != nil && ctx.Err() == nil {
				a.log.Error(err, "pod source stopped")
			}
		}()
	}
	wg.Add(3)
	go func() { defer wg.Done(); a.pleg.Run(ctx) }()
	go func() { defer wg.Done(); a.prober.Run(ctx) }()
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-a.pleg.Watch():
				a.pokePod(ev.ID)
			case u := <-a.prober.Liveness().Updates():
				a.pokePod(u.PodUID)
			case u := <-a.prober.Readiness().Updates():
				a.pokePod(u.PodUID)
			case u := <-a.prober.Startup().Updates():
				a.pokePod(u.PodUID)
			}
		}
	}()
	resync := a.clock.NewTicker(a.cfg.syncFrequency)
	housekeeping := a.clock.NewTicker(housekeepingPeriod)
	gc := a.clock.NewTicker(containerGCPeriod)
	defer resync.Stop()
	defer housekeeping.Stop()
	defer gc.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case u := <-a.mux.Updates():
			a.apply(ctx, u)
		case <-resync.C():
			a.pokeAll()
		case <-housekeeping.C():
			a.housekeeping(ctx)
		case <-gc.C():
			a.removeOldPodLogs(ctx)
		}
	}
	wg.Wait()
	a.waitWorkers()
	a.orphanWG.Wait()
}

// connect dials the remote runtime, or serves a fake one in-process.
func connect(ctx context.Context, cfg config, log *slog.Logger, opts ...runtime.Option) (*runtime.Client, func(), error) {
	if cfg.runtimeKind != "fake" {
		dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		client, err := runtime.Dial(dctx, cfg.endpoint, opts...)
		cancel()
		if err == nil {
			log.Info("using remote runtime", "endpoint", cfg.endpoint)
			return client, func() { client.Close(context.Background()) }, nil
		}
		if cfg.runtimeKind == "remote" {
			return nil, nil, err
		}
		log.Info("remote runtime not available, using the in-process fake runtime", "endpoint", cfg.endpoint, "reason", err.Error())
	}
	dir, err := os.MkdirTemp("", "nodekit-fake-cri-")
	if err != nil {
		return nil, nil, err
	}
	f := fake.New(fake.WithImages("nodekit.local/pause:1", "nodekit.local/testbin:1"), fake.WithHostPorts(cfg.fakeServesPorts))
	endpoint := "unix://" + filepath.Join(dir, "fake.sock")
	stopServing, err := f.Start(endpoint)
	if err != nil {
		return nil, nil, err
	}
	client, err := runtime.Dial(ctx, endpoint, opts...)
	if err != nil {
		stopServing()
		return nil, nil, err
	}
	log.Info("using fake runtime", "endpoint", endpoint)
	return client, func() {
		client.Close(context.Background())
		stopServing()
		f.Close()
		os.RemoveAll(dir)
	}, nil
}
