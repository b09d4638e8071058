// Package podworkers is the kubelet's pod workers as a library: one worker
// goroutine per pod UID that serializes everything done to that pod, and
// drives a PodSyncer the caller provides.
//
// The ordering rules, which the state machine in machine.go enforces and
// its table tests pin:
//
//  1. A pod's Work runs one at a time. Updates that arrive during a Work
//     merge into at most one more Work after it.
//  2. A Work runs only once the status cache holds a status of the pod
//     read after the end of the pod's previous Work (GetNewerThan), so
//     each sync acts on what the previous one did, never on a stale view.
//  3. A pod is synced when it is created or updated, when SyncPodSync says
//     something changed (a lifecycle event, a probe result), after a failed
//     sync's BackOffPeriod, and ResyncInterval after its last successful
//     sync. The last two are jittered and started by Tick (Run calls it
//     every TickPeriod, as the kubelet's sync loop ticker does).
//  4. SyncPodKill makes the pod Terminating: a sync in progress is
//     cancelled (its context ends: an image pull is not waited for), then
//     TerminatePod is run with the effective grace period (Work.GracePeriod:
//     the kubelet's calculateEffectiveGracePeriod, at least 1 s), and
//     retried after the back-off until it succeeds. A later kill with a
//     shorter grace period (a force deletion) cancels the termination under
//     way and runs it again at once. Then the pod is forgotten, and updates
//     for it are ignored. A Work cut short by Run's end is done by the next
//     Run.
//  5. A pod whose namespace and name belong to another pod still syncing
//     or terminating (a static pod's new version, with a new UID) waits in
//     Waiting until that pod is forgotten, so both never hold the same
//     host ports or volumes. A waiting pod that is killed never started:
//     it is forgotten without a TerminatePod.
//  6. SyncPodKill with RuntimeOnly terminates a pod only the runtime
//     knows (an orphan found by housekeeping).
//  7. SyncPodKill with KillOptions is a kill the node decides while the
//     pod's source still has it (an eviction; KillPodNow sends it and
//     waits): the TerminatePod carries the options (grace period, final
//     status), and the pod then stays Terminated, never started again
//     and no longer among Pods, until a plain SyncPodKill (its source's
//     removal) forgets it. A Terminated pod blocks no new version. A
//     pod created with a terminal phase (Failed, Succeeded: an API pod
//     that finished before a restart) starts Terminated; one created with a
//     deletion timestamp (deleted while the agent was down) starts
//     Terminating, never synced.
//  8. A SyncPod that returns ErrPodTerminal (the pod's phase became
//     Succeeded or Failed: the kubelet's SyncPod isTerminal) makes the pod
//     Terminating: a TerminatePod with Finished kills what still runs (a
//     sidecar), and the pod then stays Terminated as in 7, never synced
//     or started again, until its source's removal forgets it.
//
// Use:
//
//	workers, _ := podworkers.New(podworkers.Config{PodSyncer: podworkers.PodSyncerFunc(
//		func(ctx context.Context, w podworkers.Work) error {
//			if w.Type == podworkers.TerminatePod {
//				_, err := mgr.TerminatePod(ctx, w.Pod, &w.GracePeriod)
//				return err
//			}
//			return mgr.SyncPod(ctx, w.Pod, w.Status, kuberuntime.SyncOptions{}).Err()
//		}), Cache: cache, Clock: clk})
//	go workers.Run(ctx)
//	workers.UpdatePod(podworkers.Update{Type: podworkers.SyncPodCreate, Pod: pod})
//
// The kubelet's SyncTerminatingPod and SyncTerminatedPod are one
// TerminatePod here: a node agent without an API server has no status to
// report between the two.
package podworkers
