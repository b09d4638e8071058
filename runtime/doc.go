// Package runtime is a thin CRI v1 client: the kubelet's remote runtime and
// image services (RuntimeService and ImageService over gRPC), with the
// kubelet's per-call timeout (2m) and a longer one for pulls, typed errors
// (errors.Is(err, runtime.ErrNotFound)), NotFound on stop/remove treated as
// success, automatic reconnects with a capped backoff when the runtime
// restarts, and the kubelet's kubelet_runtime_operations_* metrics as a
// Collector the caller registers. *Client implements the cri-api's own
// internalapi interfaces; NewInProcessClient makes the same calls on a
// server in the caller's process, without a socket. The conversions from
// the CRI's types to kubecontainer's (ContainerStatusFromCRI, ...) are
// package runtime/criconv's, which gc uses too without the client.
//
// Pods on top of the client are package kuberuntime's: its Manager takes a
// *Client as its RuntimeService and ImageService.
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
//	v, err := client.Version(ctx, runtime.CRIVersion)
//	sandboxes, err := client.ListPodSandbox(ctx, nil)
//	if err := client.StopContainer(ctx, id, 30); errors.Is(err, runtime.ErrUnavailable) { ... }
//
// Package runtime/fake is an in-memory CRI runtime served over real gRPC for
// tests, and runtime/runtimetest the contract suite both the fake and
// containerd pass.
package runtime
