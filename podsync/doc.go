// Package podsync is the kubelet's SyncPod, SyncTerminatingPod and
// HandlePodCleanups over nodekit's packages: the podworkers.PodSyncer a node
// agent hands its pod workers. It connects the runtime manager (sync,
// terminate, orphans, log GC), the pod cgroups, the volumes, the prober,
// the status cache and podstatus (reason cache, status generation and
// publication), each through a small interface declared here.
//
//	syncer, _ := podsync.New(podsync.Config{Runtime: mgr, Cgroups: cgroups,
//		Volumes: volumes, Prober: prober, Cache: cache, Statuses: statuses,
//		Reasons: podstatus.NewReasonCache(), RuntimeName: "containerd",
//		HostIPs: []string{nodeIP}})
//	workers, _ := podworkers.New(podworkers.Config{PodSyncer: syncer, Cache: cache})
//	// every housekeeping period, once every pod source has delivered:
//	err := syncer.Housekeeping(ctx, workers)
//
// A Dispatcher is the kubelet's HandlePodAdditions, Updates and Removes:
// it hands the pod sources' updates to the workers, admitting the new pods
// its Admit handlers accept (package admission's Predicate refuses those
// over --max-pods, the node's allocatable pods).
//
//	d, _ := podsync.NewDispatcher(podsync.DispatchConfig{Workers: workers, Prober: prober, Statuses: statuses})
//	for u := range mux.Updates() {
//		d.Dispatch(u)
//	}
//
// Unlike the kubelet, a sync that started or stopped something reads the
// pod back from the runtime at once and publishes its status, instead of
// waiting for the next relist.
package podsync
