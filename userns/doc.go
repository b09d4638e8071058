// Package userns gives pods with spec.hostUsers: false their user
// namespace, as the kubelet's pkg/kubelet/userns does (user namespaces for
// pods are GA in Kubernetes v1.36).
//
// A Manager splits the node's range of IDs into slots of IDsPerPod (the
// kubelet's userNamespaces.idsPerPod, default 65536) and gives each such
// pod one slot: container UIDs and GIDs 0..IDsPerPod-1 are host IDs
// base..base+IDsPerPod-1. The range is the one /etc/subuid and /etc/subgid
// give the user "kubelet" (SubIDs), or, without that user, the kubelet's
// default: every ID from IDsPerPod up. New refuses a range the kubelet
// refuses (not aligned on IDsPerPod, starting below it, or too small for
// MaxPods pods), with the kubelet's messages.
//
// A pod's slot is kept in the file "userns" in its pod directory
// (<root>/pods/<uid>/userns, the kubelet's JSON), so that a restarted node
// agent finds it again: New reads every pod directory's file, and
// PodMapping reads a pod's file before it allocates. Release frees the
// slot and removes the file when the pod is gone (the kubelet does it when
// a pod is terminated and when it cleans up orphaned pods:
// CleanupOrphans). A slot is picked as the kubelet's allocator picks one:
// from a random index, the first free one after it.
//
// PodMapping refuses a pod when the runtime handler does not support user
// namespaces (Config.Handlers, the runtime's status: the CRI
// RuntimeHandler's features.user_namespaces), and when every slot is taken,
// with the kubelet's messages; the runtime manager (kuberuntime) turns its
// answer into the sandbox's and containers' UsernsOptions and the mounts'
// ID mappings, and reports a failure as the kubelet does, with a
// FailedCreatePodSandBox event.
//
//	m, err := userns.New(userns.Config{Layout: podpath.Layout{RootDir: root},
//		Handlers: userns.HandlersFunc(func(h string) (bool, error) { ... })})
//	base, length, err := m.PodMapping(pod, "") // hostUsers: false
//	...
//	m.Release(pod.UID) // the pod is terminated
//
// # Deviations from the kubelet
//
// The kubelet asks the getsubids tool for the kubelet user's IDs (so that
// an NSS subid plugin can answer), and uses its default range when the
// tool is not installed; SubIDs reads /etc/subuid and /etc/subgid, the
// files getsubids reads without a plugin, and uses the default range when
// neither exists. The kubelet's started_user_namespaced_pods_total metrics
// are not kept.
package userns
