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
// Each part reads from a small interface (PodLister, LogLocator,
// StatsProvider, Streamer) or registry and is served only when given;
// logs and sessions need the PodLister too.
// SummaryProvider builds the summary from the runtime's CRI stats and the
// pod cgroups, and, given them, the storage stats from the node's
// directories (statfs, du-style walks), the pods' volumes
// (VolumeStatsProvider) and CRI ImageFsInfo; *kuberuntime.Manager is a
// Streamer. Bad requests get a 4xx
// naming what was wrong: 400 for a bad path or parameter, 404 for a pod or
// container that is not there, 405 for a wrong method; a container whose
// status shows no log is 400 with the kubelet's message ("... is waiting
// to start: ContainerCreating").
//
// The handler does not authenticate: serve it behind
// server/serverauth's Filter on TLS, as the kubelet's port 10250, and a
// read-only subset (no logs, sessions or debugging) without it, as its
// port 10255.
//
//	h, err := server.New(server.Config{Pods: statuses, Metrics: registry,
//		Checks: []server.Check{{Name: "pleg", Check: plegCheck}}})
//	l, _ := net.Listen("tcp", "127.0.0.1:10250")
//	go server.Serve(ctx, l, h)
package server
