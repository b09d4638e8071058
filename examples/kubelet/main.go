// Command kubelet is nodekit's reference node agent. This early version runs
// static pods in the kubelet's standalone mode: it reads manifests from
// --pod-manifest-path and keeps their containers running through the runtime
// package's Manager, on containerd or on an in-process fake runtime.
//
// The pod lifecycle event generator, status cache, probes, cgroups and the
// HTTP API come with their packages; until then the agent relists every
// second and logs what changes.
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
	"strings"
	"syscall"
	"time"

	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

type config struct {
	runtimeKind     string
	endpoint        string
	manifestPath    string
	hostname        string
	relistPeriod    time.Duration
	podLogsDir      string
	fakeSocketDir   string
	fakeServesPorts bool
}

func main() {
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
	fs.StringVar(&cfg.manifestPath, "pod-manifest-path", "/etc/kubernetes/manifests", "directory of static pod manifests")
	fs.StringVar(&cfg.hostname, "hostname-override", host, "node name")
	fs.DurationVar(&cfg.relistPeriod, "relist-period", time.Second, "how often pods are synced (the kubelet's PLEG relist period)")
	fs.StringVar(&cfg.podLogsDir, "pod-logs-dir", runtime.DefaultPodLogsDir, "container log root")
	fs.BoolVar(&cfg.fakeServesPorts, "fake-host-ports", true, "with the fake runtime, really serve the test image's HTTP on host-network ports")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	switch cfg.runtimeKind {
	case "auto", "remote", "fake":
	default:
		return cfg, fmt.Errorf("--runtime: invalid value %q: want auto, remote or fake", cfg.runtimeKind)
	}
	if _, err := runtime.ParseEndpoint(cfg.endpoint); err != nil {
		return cfg, fmt.Errorf("--container-runtime-endpoint: %w", err)
	}
	if cfg.relistPeriod <= 0 {
		return cfg, fmt.Errorf("--relist-period: invalid value %s: must be positive", cfg.relistPeriod)
	}
	cfg.hostname = strings.ToLower(cfg.hostname)
	return cfg, nil
}

func run(ctx context.Context, cfg config, log *slog.Logger) error {
	client, closeRuntime, err := connect(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closeRuntime()
	mgr, err := runtime.NewManager(runtime.ManagerConfig{Runtime: client, Images: client, PodLogsDir: cfg.podLogsDir})
	if err != nil {
		return err
	}
	log.Info("nodekit agent started", "node", cfg.hostname, "manifests", cfg.manifestPath, "relist", cfg.relistPeriod)
	a := &agent{cfg: cfg, log: log, mgr: mgr, known: map[string]*trackedPod{}}
	ticker := time.NewTicker(cfg.relistPeriod)
	defer ticker.Stop()
	for {
		a.syncAll(ctx)
		select {
		case <-ctx.Done():
			log.Info("shutting down; pods keep running in the runtime")
			return ctx.Err()
		case <-ticker.C:
		}
	}
}

// connect dials the remote runtime, or serves a fake one in-process.
func connect(ctx context.Context, cfg config, log *slog.Logger) (*runtime.Client, func(), error) {
	if cfg.runtimeKind != "fake" {
		dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		client, err := runtime.Dial(dctx, cfg.endpoint)
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
	client, err := runtime.Dial(ctx, endpoint)
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
