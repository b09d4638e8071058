// Package prober runs the kubelet's liveness, readiness and startup probes,
// built to run 10,000 of them on one node.
//
// Semantics are the kubelet's (pkg/kubelet/prober): one worker per (pod,
// container, probe type), sidecars (init containers with restartPolicy
// Always) included, other init containers never probed; results by container ID in three Results whose
// Updates channels the caller consumes; defaults timeout 1s, period 10s,
// success threshold 1, failure threshold 3; a new container ID starts at
// readiness Failure, liveness Success, startup Unknown; a result takes
// effect after threshold-many identical results in a row; nothing runs
// before initialDelaySeconds after the container started; liveness and
// readiness wait for the startup probe to succeed, which then stops; after a
// liveness or startup failure a worker holds until a new container ID; a
// probe that errors is retried three times and otherwise ignored; workers
// stop when their container will not restart (a sidecar always restarts),
// when the pod is deleted
// (liveness and startup report Success during shutdown) or on RemovePod.
// The first probe of a worker created shortly after the agent started is
// delayed by a random part of its period. A probe's own
// terminationGracePeriodSeconds is applied by the runtime manager when it
// kills the container.
//
// # Scale
//
// The kubelet runs a goroutine and a ticker per probe and lets them all run
// at once. Here one scheduler goroutine keeps the workers in a heap ordered
// by due time, with a single timer, and does each due worker's bookkeeping
// itself. With the default Runner, plain-HTTP and TCP probes of IP
// addresses, nearly all probes, run there too, through probe.Batch:
// non-blocking sockets, answers read on the scheduler's next wake-ups, and
// probes due within 2ms of each other started together, so that thousands
// of probes share a few hundred wake-ups a second. On a 2-core VM where a
// loopback probe's kernel work alone is about 17µs, that took 10,000 HTTP
// probes a second from 0.6 to 0.24 of a core (BenchmarkManyWorkers, which
// reports user and kernel CPU apart); on a VM whose system calls cost
// 1.1µs each the kernel's share alone is 0.3 of a core, the prober's own
// 0.12-0.14. Exec, gRPC and
// https probes, and those of a custom Runner, run on a goroutine each.
// At most MaxConcurrentProbes (default 512) probes are in flight: a
// thousand hanging targets cost at most that many sockets, each cut off at
// its timeout, and only delay other probes once the bound is reached. Every
// HTTP probe opens a fresh connection, as the kubelet does, and closes it
// with SO_LINGER 0 so probes leave no TIME_WAIT.
//
// # Use
//
//	m, err := prober.New(prober.Config{Statuses: statusCache, Exec: criClient})
//	go m.Run(ctx) // returns nil when ctx ends, after closing the Updates channels
//	m.AddPod(pod)
//	for u := range m.Liveness().Updates() { // and Readiness, Startup: read all three
//		podWorkers.Sync(u.PodUID) // its next SyncPod restarts a container whose liveness failed
//	}
//	mgr.SyncPod(ctx, pod, status, kuberuntime.SyncOptions{Probes: m})
package prober
