// Package runtime talks to a container runtime over CRI v1 and manages pods
// on it, as the kubelet's pkg/kubelet/kuberuntime does.
//
// It has two layers:
//
//   - Client: a thin CRI client (RuntimeService and ImageService over gRPC)
//     with the kubelet's per-call timeout (2m) and a longer one for pulls,
//     typed errors (errors.Is(err, runtime.ErrNotFound)), NotFound on
//     stop/remove treated as success, automatic reconnects with a capped
//     backoff when the runtime restarts, and the kubelet's
//     kubelet_runtime_operations_* metrics as a Collector the caller
//     registers. It implements the cri-api's own internalapi interfaces.
//   - Manager: pods on top of the client. GetPods and GetPodStatus read the
//     runtime's state back through the kubelet's labels; SyncPod computes the
//     actions with ComputePodActions (a pure function, table-tested) and
//     carries them out: sandbox from the pod spec, init containers in order,
//     sidecars (init containers with restartPolicy Always) in their place
//     among them — the next init container waits until the sidecar runs and
//     passed its startup probe — and kept running, restarted whenever they
//     exit, whatever the pod's restartPolicy; containers with their resources (package resources, shared with
//     cgroupmgr), restart policy and CrashLoopBackOff (10s doubling to 5m);
//     KillPod stops everything within the grace period — regular
//     containers first, in parallel, then the sidecars in reverse spec
//     order, as the kubelet's termination ordering does — and RemovePod
//     cleans up.
//
// # Why a thin client, not k8s.io/cri-client
//
// k8s.io/cri-client is the kubelet's own remote client, but it drags in
// component-base, klog, OpenTelemetry and their trees, while an embeddable
// library should cost its users little. The CRI surface is generated code:
// what the kubelet's client adds — timeouts, error mapping, metrics — is a
// unary interceptor here, about two hundred lines on k8s.io/cri-api and grpc.
// What we give up is its image-pull progress tracking; DefaultImagePullTimeout
// bounds pulls instead.
//
// # Use
//
//	metrics := runtime.NewMetrics()
//	registry.MustRegister(metrics)
//	client, err := runtime.Dial(ctx, runtime.DefaultRuntimeEndpoint, runtime.WithMetrics(metrics))
//	if err != nil { ... }
//	defer client.Close(ctx)
//	mgr, err := runtime.NewManager(runtime.ManagerConfig{Runtime: client, Images: client})
//	status, err := mgr.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
//	result := mgr.SyncPod(ctx, pod, status, runtime.SyncOptions{CgroupParent: "/kubepods/pod" + string(pod.UID)})
//	if err := result.Err(); err != nil { ... } // e.g. errors.Is(err, runtime.ErrCrashLoopBackOff)
//
// Package runtime/fake is an in-memory CRI runtime served over real gRPC for
// tests, and runtime/runtimetest the contract suite both the fake and
// containerd pass.
//
// # Deviations from the kubelet
//
// In-place resize, image pull secrets and the
// termination-message file are not handled yet. The
// container hash covers name and image only, as the kubelet's does since
// v1.31. Back-off has no jitter, so tests can predict it.
package runtime
