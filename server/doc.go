// Package server is the kubelet's HTTP API as an http.Handler a node agent
// mounts on its own listener: the same paths and query parameters as the
// kubelet's (Handler lists them): /pods, /healthz, /metrics,
// /metrics/resource, /metrics/probes, /stats/summary,
// /containerLogs, /exec, /attach, /portForward, /run and /debug/pprof.
//
// Each part reads from a small interface (PodLister, LogLocator,
// StatsProvider, Streamer) or registry and is served only when given;
// logs and sessions need the PodLister too. SummaryProvider builds the
// summary from the runtime's CRI stats and the pod cgroups, and, given
// them, the storage stats from the node's directories (statfs, du-style
// walks), the pods' volumes (VolumeStatsProvider) and CRI ImageFsInfo;
// *kuberuntime.Manager is a Streamer. Sessions (exec, attach, port
// forward) are proxied to the runtime's CRI streaming server, as the
// kubelet does.
//
// The handler does not authenticate: serve it behind
// server/serverauth's Filter on TLS, as the kubelet's port 10250, and a
// read-only subset (no logs, sessions or debugging) without it, as its
// port 10255 (package server/serving does both).
//
//	h, err := server.New(server.Config{Pods: statuses, Metrics: registry,
//		Checks: []server.HealthCheck{{Name: "pleg", Check: plegCheck}}})
//	l, _ := net.Listen("tcp", "127.0.0.1:10250")
//	go server.Serve(ctx, l, h)
package server
