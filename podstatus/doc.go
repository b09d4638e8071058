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
// status manager does: at once when the Manager publishes a change, and
// over every pod each SyncPeriod (10s). A status is written only if it
// changed since the pod's last write or, on that periodic pass, if the API
// pod lost it (overwritten, restored from a backup: the kubelet's
// needsReconcile) unless it is terminal and being deleted; the pass reads
// the copy the pod's source last delivered (the pod given to SetPodStatus
// or ReplacePod, or the mirror pod), normalized and merged as below, not
// the API. Only what differs from the API pod's status is sent: a
// strategic-merge patch of pods/status (StatusPatch, the kubelet's
// statusutil.PatchPodStatus) with the pod's UID as a precondition, so that
// it never lands on a pod recreated with the same name. A failed write is
// retried after a jittered back-off while the other pods go on; after an
// outage each pod gets its newest status once.
// The merge keeps the API's StartTime, conditions of other writers,
// transition times of unchanged conditions and terminal phase. A static
// pod's status goes to its mirror pod (APIWriterConfig.MirrorPodFor). A pod
// whose deletion was asked (the pod given to SetPodStatus has a
// DeletionTimestamp) and whose containers have all stopped is made
// terminal in the API, then deleted with grace period 0 and its UID as a
// precondition: so publish a terminated pod's last status, and RemovePod
// once its API pod is gone. A pod not in the API, or recreated, is written
// no more; a pod removed from the Manager is forgotten.
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
//	api, err := apiclient.New(clientset)
//	writer, err := podstatus.NewAPIWriter(podstatus.APIWriterConfig{API: api, Statuses: statuses})
//	go writer.Run(ctx)
package podstatus
