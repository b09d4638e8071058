package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	v1 "k8s.io/api/core/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"
)

// PodLister lists the node's pods with their statuses;
// *podstatus.Manager implements it.
type PodLister interface {
	Pods() []v1.Pod
}

// LogLocator finds a container's CRI log file: its newest instance's, or
// with previous the one before. The handler chooses by the pod's status,
// as the kubelet: ?previous=true of a container waiting to restart reads
// its newest instance, the one that terminated last.
type LogLocator interface {
	ContainerLogPath(ctx context.Context, namespace, pod, container string, previous bool) (string, error)
}

// StatsProvider builds the Summary API's answer; *SummaryProvider is one.
type StatsProvider interface {
	Summary(ctx context.Context) (*statsapi.Summary, error)
}

// HealthCheck is a named health check for /healthz, e.g. "pleg" or "runtime".
type HealthCheck struct {
	Name  string
	Check func(ctx context.Context) error
}

// Config says what the handler serves; a nil part is not served (404).
type Config struct {
	Pods PodLister
	// Logs serves /containerLogs; it needs Pods, whose statuses choose the
	// instance to read and end a follow, as the kubelet's.
	Logs  LogLocator
	Stats StatsProvider
	// Checks make /healthz; with none it always answers ok.
	Checks []HealthCheck
	// Streams serves /exec, /attach, /portForward and /run; it needs Pods
	// to find the pods by name.
	Streams Streamer
	// RunTimeout bounds a /run command (default 0: none, as the kubelet).
	RunTimeout time.Duration
	// Metrics is served on /metrics (the caller's registry).
	Metrics prometheus.Gatherer
	// ResourceMetrics is served on /metrics/resource, the kubelet's resource
	// metrics that metrics-server scrapes: a registry of their own holding
	// NewResourceMetrics. When nil and Stats is set, the handler serves a
	// registry of its own holding NewResourceMetrics(Stats).
	ResourceMetrics prometheus.Gatherer
	// CAdvisorMetrics is served on /metrics/cadvisor: cAdvisor's container
	// metrics (*cadvisor.Collector). nil: not served.
	CAdvisorMetrics http.Handler
	// ProbeMetrics is served on /metrics/probes, where the kubelet serves
	// its prober metrics on a registry of their own (one holding
	// prober.NewMetrics()).
	ProbeMetrics prometheus.Gatherer
	// EnableDebuggingHandlers serves /debug/pprof/ (the kubelet's
	// enableDebuggingHandlers).
	EnableDebuggingHandlers bool
	// CheckTimeout bounds each health check (default 2s).
	CheckTimeout time.Duration
	// Clock paces a log follow's polling (default: wall clock).
	Clock clock.Clock
}

// Handler is the kubelet's HTTP API, to mount on a server of the caller's:
//
//	/pods            the node's pods with their statuses (a PodList)
//	/healthz         the caller's named checks ([+]name ok / [-]name failed)
//	/metrics         the caller's Prometheus registry
//	/metrics/resource
//	                 the kubelet's resource metrics, which metrics-server
//	                 scrapes: NewResourceMetrics over Stats (the caller's
//	                 registry in ResourceMetrics, else one of the handler's)
//	/metrics/cadvisor
//	                 cAdvisor's container metrics (package cadvisor)
//	/metrics/probes  the caller's prober registry (prober.NewMetrics)
//	/stats/summary   the Summary API (k8s.io/kubelet stats/v1alpha1)
//	/containerLogs/<namespace>/<pod>/<container>
//	                 tailLines, limitBytes, sinceSeconds, sinceTime,
//	                 timestamps, follow, previous: the instance the pod's
//	                 status names, its CRI log file streamed (P lines
//	                 joined); a follow ends once the container stops and
//	                 reads on across a rotation; a WebSocket gets it as
//	                 the API server's pods/log sends it (binary.k8s.io,
//	                 base64.binary.k8s.io)
//	/exec/<namespace>/<pod>[/<uid>]/<container>?command=...&input=1&output=1&error=1&tty=1
//	/attach/<namespace>/<pod>[/<uid>]/<container>?input=1&output=1&error=1
//	/portForward/<namespace>/<pod>[/<uid>]
//	                 sessions: an SPDY or WebSocket upgrade proxied to the
//	                 runtime's CRI streaming server (containerd's), as the
//	                 kubelet does; attach's tty is the container spec's
//	/run/<namespace>/<pod>[/<uid>]/<container>?cmd=...
//	                 POST: runs the command, answers its output
//	/debug/pprof/    with EnableDebuggingHandlers
//
// Bad requests get a 4xx naming what was wrong: 400 for a bad path or
// parameter, 404 for a pod or container that is not there, 405 for a wrong
// method; a container whose status shows no log is 400 with the kubelet's
// message ("... is waiting to start: ContainerCreating").
type Handler struct {
	cfg Config
	mux *http.ServeMux
}

// New returns the handler for cfg. Each check needs a name, unique, that
// can be a path element of /healthz/<name>.
func New(cfg Config) (*Handler, error) {
	seen := map[string]bool{}
	for i, c := range cfg.Checks {
		switch {
		case c.Name == "" || strings.Contains(c.Name, "/"):
			return nil, fmt.Errorf("server: Config.Checks[%d].Name: Invalid value: %q: must be a non-empty path element", i, c.Name)
		case seen[c.Name]:
			return nil, fmt.Errorf("server: Config.Checks[%d].Name: Duplicate value: %q", i, c.Name)
		case c.Check == nil:
			return nil, fmt.Errorf("server: Config.Checks[%d].Check is nil", i)
		}
		seen[c.Name] = true
	}
	if cfg.CheckTimeout < 0 {
		return nil, fmt.Errorf("server: Config.CheckTimeout: Invalid value: %v: must not be negative", cfg.CheckTimeout)
	}
	if cfg.CheckTimeout == 0 {
		cfg.CheckTimeout = 2 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Streams != nil && cfg.Pods == nil {
		return nil, errors.New("server: Config.Streams needs Config.Pods to find pods by name")
	}
	if cfg.Logs != nil && cfg.Pods == nil {
		return nil, errors.New("server: Config.Logs needs Config.Pods: the pod's status says which log to read and when a follow ends")
	}
	if cfg.ResourceMetrics == nil && cfg.Stats != nil {
		reg := prometheus.NewRegistry()
		reg.MustRegister(NewResourceMetrics(cfg.Stats))
		cfg.ResourceMetrics = reg
	}
	h := &Handler{cfg: cfg, mux: http.NewServeMux()}
	h.mux.HandleFunc("/healthz", h.healthz)
	h.mux.HandleFunc("/healthz/", h.healthz)
	if cfg.Pods != nil {
		h.mux.HandleFunc("/pods", h.pods)
	}
	if cfg.Metrics != nil {
		h.mux.Handle("/metrics", promhttp.HandlerFor(cfg.Metrics, promhttp.HandlerOpts{}))
	}
	// As the kubelet's: what can be gathered is served despite errors.
	partial := promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}
	if cfg.ResourceMetrics != nil {
		h.mux.Handle("/metrics/resource", promhttp.HandlerFor(cfg.ResourceMetrics, partial))
	}
	if cfg.CAdvisorMetrics != nil {
		h.mux.Handle("/metrics/cadvisor", cfg.CAdvisorMetrics)
	}
	if cfg.ProbeMetrics != nil {
		h.mux.Handle("/metrics/probes", promhttp.HandlerFor(cfg.ProbeMetrics, partial))
	}
	if cfg.Logs != nil {
		h.mux.HandleFunc("/containerLogs/", h.containerLogs)
	}
	if cfg.Stats != nil {
		h.mux.HandleFunc("/stats/summary", h.summary)
	}
	if cfg.Streams != nil {
		h.mux.HandleFunc("/exec/", h.exec)
		h.mux.HandleFunc("/attach/", h.attach)
		h.mux.HandleFunc("/portForward/", h.portForward)
		h.mux.HandleFunc("/run/", h.run)
	}
	if cfg.EnableDebuggingHandlers {
		h.mux.HandleFunc("/debug/pprof/", pprof.Index)
		h.mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		h.mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		h.mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		h.mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return h, nil
}

// ServeHTTP serves the API.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// Healthz returns a handler that serves only /healthz, for the kubelet's
// separate --healthz-port.
func (h *Handler) Healthz() http.Handler { return http.HandlerFunc(h.healthz) }

// healthz runs the checks, as Kubernetes' healthz does: "ok", or 500 with
// a line per check ([+]name ok / [-]name failed: reason). ?verbose lists
// them on success too; /healthz/<name> runs one.
func (h *Handler) healthz(w http.ResponseWriter, r *http.Request) {
	checks := h.cfg.Checks
	if name := strings.TrimPrefix(r.URL.Path, "/healthz/"); name != r.URL.Path && name != "" {
		checks = nil
		for _, c := range h.cfg.Checks {
			if c.Name == name {
				checks = append(checks, c)
			}
		}
		if len(checks) == 0 {
			http.Error(w, fmt.Sprintf("healthz: no check named %q", name), http.StatusNotFound)
			return
		}
	}
	var report strings.Builder
	failed := false
	for _, c := range checks {
		ctx, cancel := context.WithTimeout(r.Context(), h.cfg.CheckTimeout)
		err := c.Check(ctx)
		cancel()
		if err != nil {
			failed = true
			fmt.Fprintf(&report, "[-]%s failed: %v\n", c.Name, err)
			continue
		}
		fmt.Fprintf(&report, "[+]%s ok\n", c.Name)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	switch {
	case failed:
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, report.String()+"healthz check failed\n")
	case r.URL.Query().Has("verbose"):
		fmt.Fprint(w, report.String()+"healthz check passed\n")
	default:
		fmt.Fprint(w, "ok")
	}
}

func (h *Handler) pods(w http.ResponseWriter, _ *http.Request) {
	list := v1.PodList{Items: h.cfg.Pods.Pods()}
	list.APIVersion, list.Kind = "v1", "PodList"
	writeJSON(w, &list)
}

func (h *Handler) summary(w http.ResponseWriter, r *http.Request) {
	s, err := h.cfg.Stats.Summary(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, s)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// Serve serves h on l until ctx ends, then shuts the server down (5s for
// requests in flight, then closes them: a log follow never ends itself).
func Serve(ctx context.Context, l net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// LogLocatorFunc adapts a function to a LogLocator.
type LogLocatorFunc func(ctx context.Context, namespace, pod, container string, previous bool) (string, error)

// ContainerLogPath calls f.
func (f LogLocatorFunc) ContainerLogPath(ctx context.Context, namespace, pod, container string, previous bool) (string, error) {
	return f(ctx, namespace, pod, container, previous)
}
