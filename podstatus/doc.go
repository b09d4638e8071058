// Package podstatus turns what a node knows of a pod into its API status,
// as the kubelet's generateAPIPodStatus and status manager do.
//
// Generate is a pure function of its Input: the desired v1.Pod, the
// runtime's kubecontainer.PodStatus, the containers' last failed starts
// (a ReasonCache fed with each sync's result), the probe results and the
// node's IPs. It gives the phase (the kubelet's getPhase, init containers,
// sidecars and restartPolicy included), the conditions with the kubelet's
// reasons and messages, each container's state, last termination, restart
// count, image ID, Started and Ready, the pod and host IPs and the QoS
// class. Phase and Conditions are exported for callers that build a status
// their own way.
//
// Manager records the statuses a node has published and fills in what
// depends on the previous one: StartTime, each condition's
// LastTransitionTime, and a terminal phase that never changes back. It is
// where syncing statuses to an API server will live.
//
// The package needs no runtime client: *runtime.SyncResult and
// *prober.Manager satisfy its SyncResult and Probes interfaces.
//
//	reasons.Update(pod.UID, syncResult)
//	status := podstatus.Generate(podstatus.Input{Pod: pod, Runtime: runtimeStatus,
//		Reasons: reasons.Get(pod.UID), Probes: prober, RuntimeName: "containerd",
//		HostIPs: []string{nodeIP}})
//	statuses.SetPodStatus(pod, status)
package podstatus
