// Package kuberuntime manages pods on a CRI runtime, as the kubelet's
// pkg/kubelet/kuberuntime does. It turns *v1.Pod specs into CRI sandboxes
// and containers through a runtime client (package runtime's *Client, or
// anything with the cri-api's internalapi methods), and reads their status
// back.
//
// GetPods and GetPodStatus read the runtime's state back through the
// kubelet's labels; SyncPod computes the actions with ComputePodActions (a
// pure function, table-tested) and carries them out: sandbox from the pod
// spec, init containers in order, sidecars (init containers with
// restartPolicy Always) in their place among them — the next init container
// waits until the sidecar runs and passed its startup probe — and kept
// running, restarted whenever they exit, whatever the pod's restartPolicy;
// containers with their resources (package resources, shared with
// cgroupmgr), environment, /etc/hosts, lifecycle hooks, restart policy and
// CrashLoopBackOff (10s doubling to 5m); image volumes (volumes[].image)
// pulled with their pullPolicy before the containers start and mounted by
// the runtime (CRI Mount.image, read-only, with a subPath; containerd
// 2.1+), a failed pull keeping the containers that mount it in
// ErrImagePull or ImagePullBackOff. Images and image volumes alike are
// pulled with the pod's imagePullSecrets (ManagerConfig.PullSecrets reads
// them; package credentials matches them to the image's registry): each
// matching credential in the kubelet's order until one works, without
// credentials only when none matches; a secret that cannot be read is
// logged and skipped, and named in a FailedToRetrieveImagePullSecret event
// when a pull then fails. KillPod stops everything within the
// grace period — regular containers first, in parallel, then the sidecars
// in reverse spec order, as the kubelet's termination ordering does — and
// RemovePod cleans up. With SyncOptions.Resize (in-place resize), running
// containers whose resources differ from what they were given are resized
// through CRI UpdateContainerResources, decreases first, or restarted when
// their resizePolicy says RestartContainer (ComputeResizeActions).
//
// A pod with spec.hostUsers: false gets its own user namespace as in the
// kubelet v1.37: ManagerConfig.UserNamespaces (package userns) gives its
// ID range, which becomes the sandbox's NamespaceOptions.UsernsOptions
// (mode POD, the same UID and GID mapping), the containers' (which join
// it) and every mount's UID and GID mappings, for the runtime to mount
// idmapped; other pods say mode NODE. A refusal (a runtime handler without
// user namespace support, a full range, no manager) fails the sandbox
// with ErrConfigPodSandbox and the kubelet's FailedCreatePodSandBox event;
// HandlerSupportsUserNamespaces reads the runtime's status as the kubelet
// does.
//
// # Use
//
//	client, err := runtime.Dial(ctx, runtime.DefaultRuntimeEndpoint)
//	if err != nil { ... }
//	defer client.Close(ctx)
//	mgr, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: client})
//	status, err := mgr.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
//	result := mgr.SyncPod(ctx, pod, status, kuberuntime.SyncOptions{CgroupParent: "/kubepods/pod" + string(pod.UID)})
//	if err := result.Err(); err != nil { ... } // e.g. errors.Is(err, kuberuntime.ErrCrashLoopBackOff)
//	final, err := mgr.TerminatePod(ctx, pod, nil) // the pod's own grace period
//
// # Deviations from the kubelet
//
// Pods are let into the runtime's start calls a few at a time
// (ManagerConfig.MaxParallelPodStarts, by default 3 per CPU), in the order
// they asked, where the kubelet starts every pod at once: the runtime's
// start work is CPU-bound, and spread over every pod at once it finishes
// none early. On 2 cores, through the reference agent and the API, the
// median startup of 110 and of 250 pods created at once fell by 45%, the
// slowest pod's did not change (DefaultParallelPodStartsPerCPU). A
// negative MaxParallelPodStarts is the kubelet's behaviour.
//
// Pull secrets are read when a sync first needs to pull, not on every
// sync as the kubelet's getPullSecretsForPod; an image already present is
// used without checking the pod may pull it (the kubelet's
// KubeletEnsureSecretPulledImages, beta and on by default since v1.35, is
// not implemented), nor are node credentials (config.json) or credential
// provider plugins. The container hash covers name
// and image only, as the kubelet's does since v1.31. Back-off has no
// jitter, so tests can predict it.
package kuberuntime
