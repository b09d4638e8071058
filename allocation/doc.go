// Package allocation is the kubelet's allocation manager, the node's half
// of in-place pod resize (GA in Kubernetes v1.35): the resources each pod's
// containers were admitted or last resized to ("allocated"), the resources
// the runtime was last told to give each running container ("actuated"),
// both kept across restarts in checkpoint files, and the decision about a
// resize asked through the API's pods/resize subresource.
//
// A pod synced by a node agent is its allocated pod (AllocatedPod): the
// spec with each container's resources as allocated. When the spec asks
// for other resources, HandleResize decides as the kubelet does: the
// resize is allocated at once when the pod, so resized, fits the node
// beside the other pods (Config.Fit; admission's (*Predicate).FitResize);
// otherwise it stays pending with the PodResizePending condition, reason
// Deferred (RetryPending takes it again when room is made, and a node
// agent calls it periodically) or Infeasible. An allocated resize is in
// progress (the PodResizeInProgress condition) until every running
// container's actuated resources are the allocated ones; the runtime
// manager (kuberuntime) resizes the containers, restarting those whose
// resizePolicy says RestartContainer, and records what it actuated here.
// The events are the kubelet's (ResizeStarted, ResizeDeferred,
// ResizeInfeasible, ResizeCompleted, ResizeError), with its messages.
//
//	m, _ := allocation.New(allocation.Config{StateDir: rootDir, Fit: predicate.FitResize})
//	pod = m.AddPod(pod) // at admission
//	if _, differs := m.AllocatedPod(updated); differs {
//		m.HandleResize(updated, workers.ActivePods())
//	}
//	allocated, _ := m.AllocatedPod(pod) // what a sync runs
//	... sync ...
//	m.SyncDone(allocated, syncErr)
//	status.Conditions = append(status.Conditions, m.Conditions(pod.UID)...)
//
// Deviations: the checkpoints are JSON files of nodekit's own (named as
// the kubelet's, allocated_pods_state and actuated_pods_state), not the
// kubelet's checksummed format; pod-level resources and memory-backed
// emptyDir sizes are not resized (pod-level resize is beta in v1.37,
// memory-backed volumes alpha); every container and init container is.
package allocation
