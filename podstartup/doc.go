// Package podstartup is the kubelet's pod startup latency tracker
// (pkg/kubelet/util/pod_startup_latency_tracker.go): the Kubernetes pod
// startup SLI as a node sees it, from a pod's creation until the pod is
// observed through the watch with every container started.
//
// A Tracker is told what happens to a pod by the agent's parts:
//
//   - ObservedPodOnWatch, by the pod sources' mux (podsource.MuxConfig's
//     Observer), for each pod of each update, with when it arrived;
//   - RecordStatusUpdated, by the status writer once the API server has a
//     status (podstatus.APIWriterConfig's StatusWritten), with its answer;
//   - RecordImageStartedPulling / RecordImageFinishedPulling and
//     RecordInitContainerStarted / RecordInitContainerFinished, by the
//     runtime manager (kuberuntime.ManagerConfig's Startup), so that image
//     pulls and init containers are left out of the SLI;
//   - DeletePodStartupState, by the mux, once the pod is gone.
//
// When a pod whose written status showed every container running comes
// back through the watch so, the Tracker observes, as the kubelet does:
// kubelet_pod_start_total_duration_seconds (creation to that watch event),
// kubelet_pod_start_sli_duration_seconds (the same, less image pulls and
// init containers; not for a stateful pod, one with a volume other than
// secret, configMap, downwardAPI, emptyDir or projected), and
// kubelet_first_network_pod_start_sli_duration_seconds (the first such pod
// not on the host network). Pods created unschedulable (PodScheduled
// False) and pods that started before the Tracker saw them are left out.
// The Tracker is a prometheus.Collector the caller registers. Unlike the
// kubelet's, it also observes a pod whose watch event came before the
// answer to the write that showed it started (see RecordStatusUpdated).
//
// Use:
//
//	tracker := podstartup.New(podstartup.Config{Log: log})
//	registry.MustRegister(tracker)
//	mux := podsource.NewMux(podsource.MuxConfig{Observer: tracker})
//	writer, _ := podstatus.NewAPIWriter(podstatus.APIWriterConfig{StatusWritten: tracker.RecordStatusUpdated, ...})
package podstartup
