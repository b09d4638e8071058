// Package podstatus turns what a node knows of a pod into its API status,
// as the kubelet's generateAPIPodStatus and status manager do.
//
// Generate is a pure function of its Input: the desired v1.Pod, the
// runtime's kubecontainer.PodStatus, the containers' last failed starts
// (a ReasonCache fed with each sync's result), the probe results and the
// node's IPs. It gives the phase (the kubelet's getPhase, init containers,
// sidecars and restartPolicy included), the conditions with the kubelet's
// reasons and messages, each container's state (never created: waiting in
// PodInitializing in a pod with init containers, else ContainerCreating),
// last termination, restart count, image ID, Started and Ready, the pod
// and host IPs and the QoS class. Phase and Conditions are exported for
// callers that build a status their own way; ReadyStale says when a
// readiness gate's condition set in the API needs a sync at once.
//
// Manager records the statuses a node has published and fills in what
// depends on the previous one: StartTime, each condition's
// LastTransitionTime, and a terminal phase that never changes back.
//
// APIWriter writes a Manager's statuses to the API server, as the kubelet's
// status manager does: at once on a change and over every pod each
// SyncPeriod (10s), as a strategic-merge patch of pods/status with the
// pod's UID as a precondition, retried after a back-off; a static pod's
// status goes to its mirror pod; a deleted pod whose terminal status was
// published (its termination done) is made terminal in the API, then
// deleted with grace period 0. Unlike the
// kubelet's, it writes several pods at once, as writers free up rather than
// batch after batch, statuses of started or ready pods first, and does not
// read a pod before patching it (the source's copy or its last answer is
// the base). APIWriter states the write and merge rules in full.
//
// PodAPI is implemented over client-go by package podstatus/apiclient, a
// package of its own so that podstatus compiles neither client-go nor
// grpc (nor strategicpatch's OpenAPI packages: StatusPatch is computed
// from v1.PodStatus's merge keys).
//
// The package needs no runtime client: *kuberuntime.SyncResult and
// *prober.Manager satisfy its SyncResult and Probes interfaces.
//
//	reasons.Update(pod.UID, syncResult)
//	status := podstatus.Generate(podstatus.Input{Pod: pod, Runtime: runtimeStatus,
//		Reasons: reasons.Get(pod.UID), Probes: prober, RuntimeName: "containerd",
//		HostIPs: []string{nodeIP}})
//	statuses.SetPodStatus(pod, status)
//
//	api, err := apiclient.New(client) // a kubeapi.Interface
//	writer, err := podstatus.NewAPIWriter(podstatus.APIWriterConfig{API: api, Statuses: statuses})
//	go writer.Run(ctx)
package podstatus
