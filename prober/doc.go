// Package prober runs the kubelet's liveness, readiness and startup probes,
// built to run 10,000 of them on one node.
//
// Semantics are the kubelet's (pkg/kubelet/prober): one worker per (pod,
// container, probe type), sidecars (init containers with restartPolicy
// Always) included, other init containers never probed; results by
// container ID in three Results whose Updates channels the caller
// consumes; defaults timeout 1s, period 10s, success threshold 1, failure
// threshold 3; a new container ID starts at readiness Failure, liveness
// Success, startup Unknown; a result takes effect after threshold-many
// identical results in a row; nothing runs before initialDelaySeconds
// after the container started; liveness and readiness wait for the
// startup probe to succeed, which then stops; after a liveness or startup
// failure a worker holds until a new container ID; a probe that errors is
// retried three times and otherwise ignored; workers stop when their
// container will not restart (a sidecar always restarts), when the pod is
// deleted (liveness and startup report Success during shutdown) or on
// RemovePod. The first probe of a worker created shortly after the agent
// started is delayed by a random part of its period. A probe's own
// terminationGracePeriodSeconds is applied by the runtime manager when it
// kills the container.
//
// # Scale
//
// Where the kubelet runs a goroutine and a ticker per probe, one scheduler
// goroutine runs every worker from a heap with a single timer, and runs
// plain-HTTP and TCP probes itself through probe.Batch; exec, gRPC and
// https probes get a goroutine each. At most MaxConcurrentProbes (512) are
// in flight. Manager has the details.
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
