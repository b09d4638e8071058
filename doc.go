// Package nodekit is an embeddable library of kubelet building blocks: the
// kubelet's machinery as small, independent packages a custom node agent can
// import, or use as fakes to unit-test a controller.
//
//	runtime/      CRI client: RuntimeService and ImageService over gRPC or in process
//	kuberuntime/  pod-level runtime manager: SyncPod, KillPod, GetPodStatus on the CRI
//	runtime/criconv  CRI to kubecontainer conversions (runtime, kuberuntime, gc)
//	runtime/fake  in-memory CRI runtime served over real gRPC, for tests
//	runtime/runtimetest  CRI contract suite (fake and containerd pass it)
//	resources/    QoS class, CPU shares/quota, OOM score: the kubelet's formulas
//	kubecontainer/ shared types: Pod, PodStatus, labels, container hash
//	pleg/         pod lifecycle event generator: relisting and evented
//	pleg/plegmetrics  the PLEG's kubelet_pleg_* metrics for Prometheus
//	statuscache/  pod status cache with GetNewerThan
//	prober/       liveness, readiness and startup probes at scale
//	podsource/    static files, manifest URL, HTTP push, API server; merged by a mux
//	cgroupmgr/    QoS cgroup tree, cgroupfs or systemd, v1 or v2
//	podpath/      every path built from pod data, kept below its base directory
//	volume/       emptyDir and hostPath volumes as the runtime manager's mounts
//	podworkers/   one worker per pod: ordering, back-off, resync, termination
//	podstatus/    the API status (getPhase, conditions, reasons); status manager
//	podsync/      the workers' PodSyncer: sync, terminate, housekeeping
//	server/       the kubelet's HTTP API: pods, healthz, metrics, stats, logs
//	eviction/, gc/, node status and lease  (planned: open issues)
//	nodeagent/    the packages composed as the kubelet composes them (one node agent)
//	examples/kubelet  nodeagent behind the kubelet's flags
//
// Wiring a pod onto containerd takes a few lines:
//
//	client, err := runtime.Dial(ctx, "unix:///run/containerd/containerd.sock")
//	if err != nil {
//		return err
//	}
//	defer client.Close(ctx)
//	mgr, _ := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: client})
//	status, _ := mgr.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
//	if err := mgr.SyncPod(ctx, pod, status, kuberuntime.SyncOptions{}).Err(); err != nil {
//		log.Print(err) // e.g. CrashLoopBackOff: retried on the next sync
//	}
package nodekit
