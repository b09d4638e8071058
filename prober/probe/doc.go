// Package probe runs single container probes the way the kubelet's
// pkg/probe/{http,tcp,grpc,exec} do, and cheaply enough for one node to run
// 10,000 of them a second.
//
// # What
//
// Every handler returns (Result, message, error). A target that is
// unhealthy or unreachable is a Result (Failure with the reason as message),
// not an error; the error is non-nil only when the probe could not be run or
// judged (exec through a failing runtime, an HTTP request that cannot be
// built, a body that cannot be read), and callers retry those, as the
// kubelet does. Messages are the kubelet's, so events read the same.
//
//   - HTTP (HTTPProber.Probe): GET with the probe's headers plus
//     User-Agent: kube-probe/1.34 and Accept: */* unless overridden (an empty
//     Accept is dropped; a Host header sets the Host). 2xx and 3xx are
//     Success with the first 10 KiB of the body as message; a redirect to
//     another host is not followed and ends in Warning ("Probe terminated
//     redirects, Response body: ..."); same-host redirects are followed, at
//     most 10 requests; other codes are Failure ("HTTP probe failed with
//     statuscode: 503"). HTTPS skips certificate verification. No proxy.
//   - TCP: Success if the connection opens within the timeout.
//   - gRPC (GRPCProber.Probe): grpc.health.v1.Health/Check over an insecure
//     connection; only SERVING is Success. Like the kubelet's blocking dial,
//     a target that refuses connections is retried until the timeout.
//   - Exec: through an Execer (the CRI client's ExecSync); exit 0 is
//     Success, another exit code Failure, both with the first 10 KiB of
//     stdout+stderr; a timeout is Failure "command ... timed out".
//
// A zero timeout means DefaultTimeout (1s, the API default), so no probe
// waits forever. Every handler also stops when its context is cancelled.
//
// # Why it is cheap
//
// Every probe opens its own connection, as the kubelet's do: a kept-alive
// connection would keep succeeding against a server that no longer accepts.
// What is saved is everything around that connection:
//
//   - Connections are closed with SO_LINGER 0 (RST), so neither side keeps a
//     TIME_WAIT socket: at 10,000 probes a second FIN closes would hold
//     ~600,000 sockets and exhaust ephemeral ports. TCP keep-alive is off.
//   - Plain-HTTP probes to an IP or name with ordinary paths and headers
//     (nearly all of them) take a hand-written HTTP/1.1 exchange on the
//     calling goroutine: one write, reads into a pooled buffer, only the
//     framing headers parsed, the body read to 10 KiB and never further
//     (chunked, Content-Length and read-until-close bodies). It sends the
//     bytes net/http sends and reports net/http's messages. Against the
//     same loopback target it takes 35-45% of net/http's CPU per probe
//     (kernel time included), a tenth of its memory and a third of its
//     allocations, and no goroutines (see BenchmarkHTTPProbe and
//     BenchmarkHTTPProbeParallel).
//   - A Batch runs the same plain-HTTP exchange, and TCP probes, as an event
//     loop on one goroutine: non-blocking sockets opened without waiting,
//     answers collected when that goroutine next wakes, many probes to a
//     wake-up. Sleeping and waking per probe, not the exchange, is most of
//     a probe's CPU; package prober drives its probes this way.
//   - Everything else (https, FollowNonLocalRedirects, IPv6 zones, paths
//     that need escaping, unusual headers, a redirect to https) goes through
//     one shared net/http Transport configured once.
//   - Pod IPs are dialled without the resolver.
//
// # Use
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
