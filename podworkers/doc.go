// Package podworkers is the kubelet's pod workers as a library: one worker
// goroutine per pod UID that serializes everything done to that pod, and
// drives a PodSyncer the caller provides.
//
// The ordering rules, which the state machine in machine.go enforces and
// its table tests pin (Workers states each in full):
//
//  1. A pod's Work runs one at a time; updates that arrive during a Work
//     merge into at most one more Work after it.
//  2. A Work runs only once the status cache holds a status read after the
//     end of the pod's previous Work (GetNewerThan): never a stale view. A
//     Sync that read the status back after its last action says so
//     (StatusReadAt), and the next Work takes that status.
//  3. A pod is synced when created or updated, on SyncPodSync, after a
//     failed sync's back-off, and every ResyncInterval (jittered, by Tick).
//  4. SyncPodKill cancels a sync in progress, runs TerminatePod with the
//     effective grace period, retried until it succeeds, then forgets the
//     pod; a shorter grace period restarts the termination under way.
//  5. A pod whose namespace and name belong to another pod still syncing or
//     terminating (a static pod's new version) waits until it is forgotten.
//  6. SyncPodKill with RuntimeOnly terminates an orphan only the runtime knows.
//  7. SyncPodKill with KillOptions (an eviction; KillPodNow) and a SyncPod
//     returning ErrPodTerminal leave the pod Terminated, never started
//     again, until its source's removal forgets it. A pod created Failed
//     or Succeeded starts Terminated only if the status cache shows nothing
//     of it running; otherwise it is synced, and so terminated.
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
// report between the two. A pod's goroutine lives only while it has work.
package podworkers
