// Package probe runs single container probes the way the kubelet's
// pkg/probe/{http,tcp,grpc,exec} do, and cheaply enough for one node to run
// 10,000 of them a second.
//
// Every handler returns (Result, message, error). A target that is
// unhealthy or unreachable is a Result (Failure with the reason as message),
// not an error; the error is non-nil only when the probe could not be run or
// judged (exec through a failing runtime, an HTTP request that cannot be
// built, a body that cannot be read), and callers retry those, as the
// kubelet does. Messages are the kubelet's, so events read the same. A zero
// timeout means DefaultTimeout (1s, the API default), so no probe waits
// forever; every handler also stops when its context is cancelled.
//
// Handlers: HTTPProber.Probe (httpGet), TCP (tcpSocket), GRPCProber.Probe
// (grpc) and Exec (exec, through the CRI's ExecSync). Each opens its own
// connection, as the kubelet's do: a kept-alive connection would keep
// succeeding against a server that no longer accepts. What is saved is
// everything around it: connections closed with RST (no TIME_WAIT), a
// hand-written HTTP/1.1 exchange for ordinary plain-HTTP probes
// (HTTPProber says which), and Batch, an event loop that runs plain-HTTP
// and TCP probes on one goroutine, as package prober does.
//
//	hp := probe.NewHTTP(probe.HTTPOptions{}) // share one per process
//	res, msg, err := hp.Probe(ctx, probe.HTTPRequest{
//		Scheme: "http", Host: podIP, Port: 8080, Path: "/healthz", Timeout: time.Second,
//	})
//
//	res, msg, err = probe.TCP(ctx, podIP, 5432, time.Second)
//
//	b := hp.NewBatch() // owned by one goroutine
//	b.StartHTTP(time.Now(), req, func(res probe.Result, msg string, err error) { ... })
//	for b.Len() > 0 {
//		time.Sleep(b.Poll(time.Now())) // calls done as answers arrive
//	}
//
//	gp := probe.NewGRPC(probe.GRPCOptions{})
//	res, msg, err = gp.Probe(ctx, podIP, 9090, "", time.Second)
//
//	res, msg, err = probe.Exec(ctx, criClient, containerID, []string{"cat", "/tmp/healthy"}, time.Second)
package probe
