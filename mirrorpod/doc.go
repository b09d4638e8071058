// Package mirrorpod keeps the API's picture of a node's static pods: one
// mirror pod per static pod, as the kubelet's mirror client and pod manager
// do. A mirror pod is a copy of the static pod carrying its config.hash in
// the kubernetes.io/config.mirror annotation and owned by the Node (the
// only form NodeRestriction admits from a node); it is never run.
//
// Manager.Sync creates a missing mirror pod, and deletes (grace 0, UID
// precondition) and recreates one that is stale — the static pod changed —
// or being deleted by someone. DeleteOrphans removes those whose static pod
// is gone. The Manager learns which mirror pods exist from the API pod
// source: pass it every pod the source delivers (Observe, Forget: only
// once the pod is gone from the API, never for a deletion timestamp, which
// leaves it there); use IsMirrorPod to keep mirror pods out of the pods to
// run.
//
//	m, err := mirrorpod.New(mirrorpod.Config{Client: client, NodeName: "node-1"} // a kubeapi.Interface)
//	for each API source update: m.Observe(pod), or m.Forget(pod) once removed
//	for each sync of a static pod: err = m.Sync(ctx, staticPod)
//	in housekeeping: err = m.DeleteOrphans(ctx, isStaticPod)
package mirrorpod
