// Command hollownodes runs hollow nodes (package hollow) against a
// cluster, for scale tests from the command line: --nodes N node agents in
// this one process, each on its own fake runtime, that register, heartbeat,
// run the pods bound to them and report their statuses until the process
// is stopped (SIGINT or SIGTERM); the Nodes are then deleted unless
// --keep-nodes. The kubeconfig's identity must be allowed to act for every
// node (an admin's).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodekit-dev/nodekit/hollow"
	"github.com/nodekit-dev/nodekit/nodestatus"
)

type options struct {
	nodes, maxPods, cpu, verbosity int
	kubeconfig, prefix, memory     string
	labels, taints, metricsAddr    string
	keep, servePorts               bool
	memoryBytes                    int64 // --memory, parsed
}

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(hollow.GCPercent) // unless the environment sets GOGC
	}
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "hollownodes:", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.Level(-o.verbosity)}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, log); err != nil {
		log.Error("hollow nodes stopped", "error", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("hollownodes", flag.ContinueOnError)
	fs.IntVar(&o.nodes, "nodes", 1, "how many hollow nodes to run")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the API server (required; an identity that may act for every node)")
	fs.StringVar(&o.prefix, "name-prefix", hollow.DefaultNamePrefix, "node i is named <prefix><i>")
	fs.IntVar(&o.cpu, "cpu", hollow.DefaultCPU, "each node's CPU capacity, in cores")
	fs.StringVar(&o.memory, "memory", "16Gi", "each node's memory capacity")
	fs.IntVar(&o.maxPods, "max-pods", hollow.DefaultMaxPods, "each node's pods capacity")
	fs.StringVar(&o.labels, "node-labels", "", "labels of every node: key=value,...")
	fs.StringVar(&o.taints, "register-with-taints", "", "taints of every node: key=value:Effect,...")
	fs.BoolVar(&o.keep, "keep-nodes", false, "leave the Node objects behind at exit")
	fs.BoolVar(&o.servePorts, "serve-ports", false, "serve the test image's HTTP on pod loopback IPs, so its probes pass")
	fs.StringVar(&o.metricsAddr, "metrics-address", "", "serve every node's metrics (label node) on this address's /metrics, e.g. 127.0.0.1:9100")
	fs.IntVar(&o.verbosity, "v", 0, "log verbosity")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected arguments: %q", fs.Args())
	case o.kubeconfig == "":
		return o, errors.New("--kubeconfig: required")
	case o.nodes < 1:
		return o, fmt.Errorf("--nodes: invalid value %d: must be at least 1", o.nodes)
	}
	mem, err := resource.ParseQuantity(o.memory)
	if err != nil {
		return o, fmt.Errorf("--memory: invalid value %q: %w", o.memory, err)
	}
	o.memoryBytes = mem.Value()
	return o, nil
}

func run(ctx context.Context, o options, log *slog.Logger) error {
	rc, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("--kubeconfig: %w", err)
	}
	labels, err := nodestatus.ParseLabels(o.labels)
	if err != nil {
		return err
	}
	taints, err := nodestatus.ParseTaints(o.taints)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	nodes, err := hollow.New(ctx, hollow.Config{Rest: rc, Nodes: o.nodes, NamePrefix: o.prefix, CPU: o.cpu, Memory: o.memoryBytes,
		MaxPods: o.maxPods, Labels: labels, Taints: taints, KeepNodes: o.keep, ServePorts: o.servePorts, Registerer: reg,
		Log: logr.FromSlogHandler(log.Handler())})
	if err != nil {
		return err
	}
	if o.metricsAddr != "" {
		l, err := net.Listen("tcp", o.metricsAddr)
		if err != nil {
			return fmt.Errorf("--metrics-address: %w", err)
		}
		srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(l) }()
		defer srv.Close()
	}
	log.Info("hollow nodes started", "nodes", o.nodes, "first", o.prefix+"0")
	if err := nodes.Run(ctx); err != nil {
		return err
	}
	log.Info("hollow nodes stopped", "nodesDeleted", !o.keep)
	return nil
}
