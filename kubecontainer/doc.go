// Package kubecontainer is the vocabulary the node packages share, as the
// kubelet's pkg/kubelet/container is: a pod and its containers as the runtime
// reports them (Pod, Container), their full status (PodStatus,
// ContainerStatus, SandboxStatus), the runtime's container events
// (ContainerEvent), mounts, the labels and annotations a kubelet puts on
// what it creates, and the container hash.
//
// It holds nodekit's own small types, not the CRI's: the conversions from
// the CRI live in package runtime/criconv, beside the CRI client. So
// kubecontainer and the packages that speak of pods in its terms
// (statuscache, pleg, podstatus, podworkers, volume) compile without grpc;
// they declare the interfaces they consume, in these types.
package kubecontainer
