// Package server is the kubelet's HTTP API as an http.Handler a node agent
// mounts on its own listener: the same paths and query parameters as the
// kubelet's.
//
//	/pods            the node's pods with their statuses (a PodList)
//	/healthz         the caller's named checks ([+]name ok / [-]name failed)
//	/metrics         the caller's Prometheus registry
//	/metrics/resource
//	                 the kubelet's resource metrics, which metrics-server
//	                 scrapes: NewResourceMetrics over Stats (the caller's
//	                 registry in ResourceMetrics, else one of the handler's)
//	/metrics/probes  the caller's prober registry (prober.NewMetrics)
//	/stats/summary   the Summary API (k8s.io/kubelet stats/v1alpha1)
//	/containerLogs/<namespace>/<pod>/<container>
//	                 tailLines, limitBytes, sinceSeconds, sinceTime,
//	                 timestamps, follow, previous; CRI log files streamed,
//	                 runtime-split (P) lines joined
//	/debug/pprof/    with EnableDebuggingHandlers
//
// Each part reads from a small interface (PodLister, LogLocator,
// StatsProvider) or registry and is served only when given.
// SummaryProvider builds the summary from the runtime's CRI stats and the
// pod cgroups. TLS, authentication and the streaming endpoints (exec,
// attach, port-forward) come with the API-server mode.
//
//	h, err := server.New(server.Config{Pods: statuses, Metrics: registry,
//		Checks: []server.Check{{Name: "pleg", Check: plegCheck}}})
//	l, _ := net.Listen("tcp", "127.0.0.1:10250")
//	go server.Serve(ctx, l, h)
package server
