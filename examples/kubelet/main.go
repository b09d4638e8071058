// Command kubelet is nodekit's reference node agent: flags, a
// KubeletConfiguration file, the runtime connection and serving around
// package nodeagent's composition of nodekit's packages, nothing else.
// It runs static pods (--pod-manifest-path, --manifest-url) and, with
// --kubeconfig, the API server's pods, on containerd or, built with
// -tags fakeruntime, on an in-process fake runtime (--runtime=fake, or
// --runtime=auto when containerd does not answer; without the tag these
// fail with an error naming it, so a production build carries no fake):
//
//	go run -tags fakeruntime ./examples/kubelet --config examples/kubelet/standalone.yaml
//
// Built as the README says (static, -tags grpcnotrace), it maps no libc
// or NSS module and reads the userns "kubelet" user from /etc/passwd. Pod
// workers (podworkers) sync each pod through podsync and the runtime
// manager, the PLEG and the prober wake them, podstatus makes their
// statuses, and package server serves the kubelet's API: on --address:--port
// over TLS behind server/serverauth (client certificates, TokenReview,
// SubjectAccessReview), its read-only subset on --read-only-port, /healthz
// on --healthz-bind-address:--healthz-port. It takes the kubelet v1.37's
// command line (kubeletflags): flags it implements behave as the kubelet's,
// others are logged once as accepted without effect. Serving defaults are
// server/serving.Settings', KubeletConfiguration v1beta1's also for flags
// (toward the secure side); without --kubeconfig, the kubelet's standalone
// ones on 127.0.0.1. It touches only sandboxes labelled
// nodekit.dev/node=<node name>, so agents can share a runtime.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"

	"github.com/nodekit-dev/nodekit/cadvisor"
	"github.com/nodekit-dev/nodekit/containerlog"
	"github.com/nodekit-dev/nodekit/kubeletflags"
	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/nodestatus"
	"github.com/nodekit-dev/nodekit/pleg"
	"github.com/nodekit-dev/nodekit/resources"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/runtimeconn"
	nodeserving "github.com/nodekit-dev/nodekit/server/serving"
)

type config struct {
	runtimeKind, endpoint, imageEndpoint, manifestPath, manifestURL, hostname, hostIP          string
	podLogsDir, rootDir, cgroupRoot, cgroupDriver, kubeconfig, clusterDomain, containersLogDir string
	containerLogs                                                                              containerlog.Config
	relistPeriod, syncFrequency, fileCheckFreq, nodeStatusFreq, housekeepingInterval           time.Duration
	maxPods, leaseSeconds, apiQPS, apiBurst                                                    int
	nodeLabels                                                                                 map[string]string
	taints                                                                                     []v1.Taint
	kubeReserved, systemReserved                                                               string // name=quantity,...
	allowedUnsafeSysctls                                                                       []string
	cgroupsPerQOS, debugHandlers, fakeServesPorts, failCgroupV1, attachDetach                  bool
	// singleProcessOOMKill: config file only; on cgroup v2 an OOM kill takes one process.
	singleProcessOOMKill bool
	usernsIDsPerPod      int64 // the config file's userNamespaces.idsPerPod (0: 65536)
	serving              nodeserving.Settings
	gc                   gcSettings
	eviction             evictionSettings
	verbosity            int
	// ignored: kubelet flags and config fields given, accepted without effect (logged).
	ignoredFlags, ignoredFields []string
	// loaded is what --config and --config-dir held, for the kubelet's warnings at start.
	loaded *kubeletflags.LoadedConfig
	// version is --version: printed and exit, or the version reported.
	version kubeletflags.VersionFlag
}

// gcPercent is the agent's GOGC unless the environment sets one: its live heap is small (~8 MB with
// 110 pods); 25 rather than 50 keeps 1.7 MB of garbage out of RSS for 4 millicores (110 probed pods).
const gcPercent = 25

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	cfg, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0) // usage printed, as kubelet --help
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubelet:", err)
		os.Exit(2)
	}
	if text := cfg.version.Text(); text != "" {
		fmt.Print(text)
		os.Exit(0)
	}
	// logr's V(n) is slog's level -n: -v=4 shows V(4) and below.
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.Level(-cfg.verbosity)}))
	cfg.loaded.Log(logr.FromSlogHandler(log.Handler()))
	if len(cfg.ignoredFlags) > 0 {
		log.Info("kubelet flags accepted without effect in this agent", "flags", cfg.ignoredFlags)
	}
	if len(cfg.ignoredFields) > 0 {
		log.Info("KubeletConfiguration fields accepted without effect in this agent", "fields", cfg.ignoredFields)
	}
	if s := cfg.serving; len(s.Standalone) > 0 {
		log.Info("no --kubeconfig, so no API server for webhook authentication or authorization: --port serves the kubelet's "+
			"standalone defaults, on 127.0.0.1 unless --address is given", "address", s.Address, "port", s.Port, "changed", s.Standalone)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, log); err != nil && !errors.Is(err, context.Canceled) {
		log.Error("agent stopped", "error", err)
		os.Exit(1)
	}
}

// rawFlags are flag values that parseFlags turns into config fields.
type rawFlags struct {
	serving                                   *nodeserving.Flags
	configFile, configDir, nodeLabels, taints string
}

// agentExtras are the agent's flags that the kubelet does not have.
var agentExtras = []string{"containers-log-dir", "fake-host-ports", "node-lease-duration-seconds", "pod-infra-container-image", "pod-logs-dir", "relist-period", "runtime"}

func parseFlags(args []string) (config, error) {
	cfg := config{version: kubeletflags.VersionFlag{Default: nodestatus.DefaultKubeletVersion}}
	var raw rawFlags
	fs := newFlagSet(&cfg, &raw)
	// Every other kubelet flag is accepted, checked, and reported unused.
	accepted := kubeletflags.AcceptRest(fs)
	fs.SetOutput(io.Discard) // an error is one line, not it and 170 flags' usage
	if err := fs.Parse(kubeletflags.NormalizeArgs(fs, args)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stdout)
			fs.PrintDefaults()
		}
		return cfg, err
	}
	if cfg.version.Print != "" {
		return cfg, nil // printed before the rest is read, as the kubelet does
	}
	cfg.ignoredFlags = accepted.Set()
	return cfg, cfg.finish(fs, raw)
}

// newFlagSet registers the agent's flags: the kubelet's it implements and
// its extras (agentExtras).
func newFlagSet(cfg *config, raw *rawFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("kubelet", flag.ContinueOnError)
	host, _ := os.Hostname()
	fs.StringVar(&cfg.runtimeKind, "runtime", "auto", "container runtime: auto (containerd if it answers, else fake), remote, or fake (the fake needs -tags fakeruntime)")
	fs.StringVar(&cfg.endpoint, "container-runtime-endpoint", runtime.DefaultRuntimeEndpoint, "CRI endpoint of the remote runtime")
	fs.StringVar(&cfg.imageEndpoint, "image-service-endpoint", "", "CRI image service endpoint (default: the runtime endpoint)")
	fs.StringVar(&cfg.manifestPath, "pod-manifest-path", "/etc/kubernetes/manifests", "directory of static pod manifests")
	fs.StringVar(&cfg.hostname, "hostname-override", host, "node name")
	fs.DurationVar(&cfg.relistPeriod, "relist-period", pleg.DefaultRelistPeriod, "PLEG relist period")
	fs.DurationVar(&cfg.syncFrequency, "sync-frequency", time.Minute, "max period between syncs of each pod")
	fs.DurationVar(&cfg.fileCheckFreq, "file-check-frequency", 20*time.Second, "how often the manifest directory is re-read")
	fs.DurationVar(&cfg.housekeepingInterval, "housekeeping-interval", cadvisor.DefaultHousekeepingInterval, "how often /metrics/cadvisor's cgroups are read")
	cfg.containerLogs.AddFlags(fs)
	fs.StringVar(&cfg.containersLogDir, "containers-log-dir", containerlog.DefaultContainersLogDir, "where each container's log gets its <pod>_<namespace>_<container>-<id>.log link (the kubelet's /var/log/containers)")
	raw.serving = cfg.serving.AddFlags(fs)
	addGCFlags(fs, &cfg.gc)
	addEvictionFlags(fs, &cfg.eviction)
	fs.IntVar(&cfg.verbosity, "v", 0, "log verbosity (klog's -v: higher logs more)")
	fs.StringVar(&cfg.hostIP, "node-ip", "127.0.0.1", "the node's IP, reported for host-network pods and probed there")
	fs.StringVar(&cfg.manifestURL, "manifest-url", "", "URL polled for a Pod or PodList")
	fs.BoolVar(&cfg.cgroupsPerQOS, "cgroups-per-qos", true, "create the QoS and pod cgroup hierarchy (not with the fake runtime)")
	fs.BoolVar(&cfg.failCgroupV1, "fail-cgroupv1", true, "refuse to start on a cgroup v1 host (with a runtime on this host), as the kubelet since v1.35")
	fs.BoolVar(&cfg.attachDetach, "enable-controller-attach-detach", true, "let the attach-detach controller attach this node's volumes (the Node's annotation)")
	fs.StringVar(&cfg.cgroupRoot, "cgroup-root", "/", "parent of the kubepods cgroup")
	fs.StringVar(&cfg.cgroupDriver, "cgroup-driver", "cgroupfs", "cgroup naming: cgroupfs or systemd")
	fs.IntVar(&cfg.maxPods, "max-pods", 110, "pods this node runs at most; more are rejected")
	fs.StringVar(&cfg.rootDir, "root-dir", "/var/lib/kubelet", "directory for pod volumes")
	fs.BoolVar(&cfg.debugHandlers, "enable-debugging-handlers", true, "serve /debug/pprof/ on --port")
	fs.Var(&cfg.version, "version", "--version, --version=raw prints version information and quits; --version=vX.Y.Z... sets the reported version")
	fs.StringVar(&raw.configFile, "config", "", "a KubeletConfiguration file (kubelet.config.k8s.io/v1beta1); flags override it")
	fs.StringVar(&raw.configDir, "config-dir", "", "a directory of KubeletConfiguration drop-ins (*.conf, in lexical order) merged over --config; flags override them")
	fs.StringVar(&cfg.podLogsDir, "pod-logs-dir", kuberuntime.DefaultPodLogsDir, "container log root")
	fs.BoolVar(&cfg.fakeServesPorts, "fake-host-ports", true, "with the fake runtime, really serve the test image's HTTP on host-network ports")
	fs.StringVar(&cfg.kubeconfig, "kubeconfig", "", "kubeconfig of the API server: joins the cluster (node, lease, API pods, mirror pods, events)")
	fs.DurationVar(&cfg.nodeStatusFreq, "node-status-update-frequency", nodestatus.DefaultUpdateFrequency, "how often the node status is computed")
	fs.IntVar(&cfg.apiQPS, "kube-api-qps", 50, "requests per second to the API server")
	fs.IntVar(&cfg.apiBurst, "kube-api-burst", 100, "burst of requests to the API server")
	fs.IntVar(&cfg.leaseSeconds, "node-lease-duration-seconds", nodestatus.DefaultLeaseDurationSeconds, "duration of the node's lease")
	fs.StringVar(&raw.nodeLabels, "node-labels", "", "labels to add when registering the node: key=value,...")
	fs.StringVar(&raw.taints, "register-with-taints", "", "taints to register the node with: key=value:Effect,...")
	fs.StringVar(&cfg.kubeReserved, "kube-reserved", "", "resources held back for Kubernetes daemons: cpu=200m,memory=500Mi,...")
	fs.StringVar(&cfg.systemReserved, "system-reserved", "", "resources held back for the system: cpu=200m,memory=500Mi,...")
	fs.StringVar(&cfg.clusterDomain, "cluster-domain", "", "the cluster's DNS domain: pods with a subdomain are named by their FQDN in /etc/hosts")
	fs.Func("allowed-unsafe-sysctls", "unsafe sysctls (or prefixes ending in *) pods may set: name,...", func(v string) error {
		cfg.allowedUnsafeSysctls = append(cfg.allowedUnsafeSysctls, strings.Split(v, ",")...)
		return nil
	})
	return fs
}

// finish checks the parsed flags and folds in the config file.
func (cfg *config) finish(fs *flag.FlagSet, raw rawFlags) error {
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	var err error
	if cfg.nodeLabels, err = nodestatus.ParseLabels(raw.nodeLabels); err != nil {
		return err
	}
	if cfg.taints, err = nodestatus.ParseTaints(raw.taints); err != nil {
		return err
	}
	if raw.configFile != "" || raw.configDir != "" {
		if err := applyConfigFile(fs, cfg, raw.serving, raw.configFile, raw.configDir); err != nil {
			return err
		}
	}
	if err := raw.serving.Finish(cfg.rootDir, cfg.kubeconfig != ""); err != nil {
		return err
	}
	if _, err := runtimeconn.ParseKind(cfg.runtimeKind); err != nil {
		return fmt.Errorf("--runtime: %w", err)
	}
	for name, e := range map[string]string{"--container-runtime-endpoint": cfg.endpoint, "--image-service-endpoint": cfg.imageEndpoint} {
		if _, err := runtime.ParseEndpoint(e); e != "" && err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	for name, d := range map[string]time.Duration{"--relist-period": cfg.relistPeriod, "--sync-frequency": cfg.syncFrequency,
		"--file-check-frequency": cfg.fileCheckFreq, "--node-status-update-frequency": cfg.nodeStatusFreq,
		"--housekeeping-interval": cfg.housekeepingInterval} {
		if d <= 0 {
			return fmt.Errorf("%s: invalid value %s: must be positive", name, d)
		}
	}
	for flag, v := range map[string]string{"--kube-reserved": cfg.kubeReserved, "--system-reserved": cfg.systemReserved} {
		if _, err := resources.ParseResourceList(flag, v); err != nil {
			return err
		}
	}
	if err := cfg.eviction.finish(); err != nil {
		return err
	}
	if cfg.cgroupDriver != "cgroupfs" && cfg.cgroupDriver != "systemd" {
		return fmt.Errorf("--cgroup-driver: invalid value %q: want cgroupfs or systemd", cfg.cgroupDriver)
	}
	for name, v := range map[string][3]int{"--max-pods": {cfg.maxPods, 1, 1 << 20}, "-v": {cfg.verbosity, 0, 10},
		"--node-lease-duration-seconds": {cfg.leaseSeconds, 1, 3600}, "--kube-api-qps": {cfg.apiQPS, 1, 1 << 20},
		"--kube-api-burst": {cfg.apiBurst, 1, 1 << 20}} {
		if v[0] < v[1] || v[0] > v[2] {
			return fmt.Errorf("%s: invalid value %d: must be between %d and %d", name, v[0], v[1], v[2])
		}
	}
	cfg.hostname = strings.ToLower(cfg.hostname)
	return nil
}

func run(ctx context.Context, cfg config, slogger *slog.Logger) error {
	log := logr.FromSlogHandler(slogger.Handler())
	rtMetrics := runtime.NewMetrics()
	client, closeRuntime, err := connect(ctx, cfg, slogger, runtime.WithMetrics(rtMetrics))
	if err != nil {
		return err
	}
	defer closeRuntime()
	a, registry, err := newAgent(ctx, cfg, log, client)
	if err != nil {
		return err
	}
	registry.MustRegister(rtMetrics)
	servers, err := a.listen()
	if err != nil {
		return err
	}
	sctx, stopServers := context.WithCancel(ctx)
	served := make(chan struct{})
	go func() { defer close(served); _ = servers.Run(sctx) }()
	defer func() { stopServers(); <-served }()
	slogger.Info("nodekit agent started", "node", cfg.hostname, "manifests", cfg.manifestPath, "runtime", a.RuntimeName(),
		"relistPeriod", cfg.relistPeriod, "syncFrequency", cfg.syncFrequency, "healthzPort", cfg.serving.HealthzPort, "port", cfg.serving.Port, "readOnlyPort", cfg.serving.ReadOnlyPort)
	a.run(ctx)
	slogger.Info("shutting down; pods keep running in the runtime")
	return ctx.Err()
}

// fakeImages are the images the in-process fake holds from the start.
var fakeImages = []string{"nodekit.local/pause:1", "nodekit.local/testbin:1"}

// connect dials the remote runtime, or serves a fake one in-process
// (runtimeconn, as --runtime says; the fake only with -tags fakeruntime).
func connect(ctx context.Context, cfg config, log *slog.Logger, opts ...runtime.Option) (*runtime.Client, func(), error) {
	conn, err := runtimeconn.Connect(ctx, runtimeconn.Config{Kind: runtimeconn.Kind(cfg.runtimeKind), Endpoint: cfg.endpoint,
		ImageEndpoint: cfg.imageEndpoint, Options: opts, Log: logr.FromSlogHandler(log.Handler()),
		FakeImages: fakeImages, FakeHostPorts: cfg.fakeServesPorts})
	if err != nil {
		return nil, nil, err
	}
	return conn.Client, conn.Close, nil
}
