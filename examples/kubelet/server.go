package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// serve starts the healthz and API servers on 127.0.0.1 (TLS and
// authentication come with the API-server mode); the returned func stops them.
func (a *agent) serve(cfg config, registry *prometheus.Registry) (func(), error) {
	healthz := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := a.healthy(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	api := http.NewServeMux()
	api.Handle("/healthz", healthz)
	api.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	api.HandleFunc("/pods", func(w http.ResponseWriter, _ *http.Request) {
		list := v1.PodList{Items: a.pods()}
		list.APIVersion, list.Kind = "v1", "PodList"
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&list)
	})
	api.HandleFunc("/containerLogs/", a.containerLogs)
	api.HandleFunc("/stats/summary", a.summary)
	if cfg.debugHandlers {
		// The kubelet's enableDebuggingHandlers: profiles on the main port.
		api.HandleFunc("/debug/pprof/", pprof.Index)
		api.HandleFunc("/debug/pprof/profile", pprof.Profile)
		api.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		api.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	healthMux := http.NewServeMux()
	healthMux.Handle("/healthz", healthz)

	var servers []*http.Server
	for _, s := range []struct {
		port    int
		handler http.Handler
	}{{cfg.healthzPort, healthMux}, {cfg.port, api}} {
		if s.port == 0 {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)))
		if err != nil {
			for _, srv := range servers {
				srv.Close()
			}
			return nil, err
		}
		srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, srv)
		go func() {
			if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				a.log.Error(err, "http server")
			}
		}()
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, srv := range servers {
			_ = srv.Shutdown(ctx)
		}
	}, nil
}

// healthy is the agent's health: the PLEG relisted within its threshold and
// the runtime answers its Status call now and says it is ready.
func (a *agent) healthy(ctx context.Context) error {
	if ok, err := a.pleg.Healthy(); !ok {
		return fmt.Errorf("pleg: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st, err := a.criClient.Status(ctx, false)
	if err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	for _, c := range st.GetStatus().GetConditions() {
		if c.Type == runtimeapi.RuntimeReady && !c.Status {
			return fmt.Errorf("runtime: not ready: %s %s", c.Reason, c.Message)
		}
	}
	return nil
}
