// Package hollow runs hollow nodes: real nodekit node agents by the
// dozen or hundred in the caller's process, each on an in-process fake
// runtime, against a real API server. A controller's, scheduler's or
// autoscaler's test gets nodes that register, heartbeat their leases, run
// the pods bound to them and report their statuses, as kubelets do; a Go
// test starts them next to envtest's API server.
//
// Each hollow node is a nodeagent.Agent, the composition the reference
// agent (examples/kubelet) runs: pod workers, PLEG, prober, status manager,
// node status and lease, admission, container and image GC. Nothing is
// forked: only the runtime is a fake (runtime/fake, called in process
// through runtime.NewInProcessClient: the CRI calls as over gRPC, without
// the encoding) that pulls any image. A container of any image runs until
// it is stopped, unless SetBehavior says otherwise; the project's test
// image (fake.TestbinImage) behaves as the real one ("exit 3", "sleep 5",
// and "serve", which answers HTTP probes on the pod's loopback IP when
// Config.ServePorts is set).
//
// Shared where it cannot change behaviour: one HTTP/2 transport to the
// API server (each node keeps its own client-side rate limiter, the
// kubelet's 50 QPS / 100 burst), one clock, one metrics registry with a
// "node" label. Separate where a kubelet is separate: the pod watch, the
// lease, the node status, the status manager and the runtime. A few
// choices keep a hundred nodes cheap, each a deliberate difference from a
// kubelet (Config lists them): the evented PLEG, shared fake listings, a
// small event cache, and GOGC=GCPercent (25) for the process.
//
// Knobs a test needs are on Node: start latency (SetStartLatency), image
// pull failures (FailPulls), what containers do — exit codes, crash loops
// (SetBehavior) — and NotReady on demand (SetReady). Capacity, labels and
// taints are Config fields.
//
//	nodes, err := hollow.New(ctx, hollow.Config{Rest: restCfg, Nodes: 3})
//	if err != nil { ... }
//	go nodes.Run(ctx) // until ctx ends; the Nodes are then deleted
//	// create pods with spec.nodeName = nodes.Nodes()[0].Name ...
//
// The rest.Config's identity must be allowed to act for every node (the
// Node authorizer lets system:node:<name> write only its own node): an
// admin's, or one in system:masters.
package hollow
