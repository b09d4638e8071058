// Package nodeagent is a node agent composed from nodekit's packages the
// way the kubelet composes its own: pod sources merged by a mux and
// admitted (eviction, then the predicates), pod workers syncing each pod
// through podsync and the runtime manager, the PLEG and the prober waking
// them, housekeeping, container and image GC, the eviction manager, and,
// with an API client, the Node, its lease, API pods, mirror pods, events
// and pod statuses. It builds the kubelet's HTTP handlers too; serving
// them (listeners, TLS, authentication) is the caller's.
//
// examples/kubelet is this package behind the kubelet's flags; several
// agents can share one process (each its own runtime client and name, one
// clock, one registry under a node label, one API transport):
//
//	client, _ := runtime.Dial(ctx, endpoint) // containerd, or runtime/fake
//	defer client.Close(ctx)
//	a, err := nodeagent.New(ctx, nodeagent.Config{NodeName: "n1", NodeIP: "10.0.0.5",
//		ManifestPath: "/etc/kubernetes/manifests", Runtime: client,
//		Registerer: prometheus.WrapRegistererWith(prometheus.Labels{"node": "n1"}, reg)})
//	if err != nil {
//		return err
//	}
//	go serve(a.APIHandler()) // behind server/serverauth
//	return a.Run(ctx)        // until ctx ends; pods keep running in the runtime
//
// On runtime/fake, or any runtime whose containers are not this host's,
// set Config.RuntimeOnHost to false: no cgroups are made for it and no
// host filesystem is read as its own.
//
// The process's own collectors (Go, process, the CRI client's
// runtime.Metrics) are the caller's to register.
package nodeagent
