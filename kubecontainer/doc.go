// Package kubecontainer is the vocabulary the node packages share, as the
// kubelet's pkg/kubelet/container is: a pod and its containers as the runtime
// reports them (Pod, Container), their full status (PodStatus,
// ContainerStatus), the labels and annotations a kubelet puts on what it
// creates, and the container hash.
//
// It is deliberately small and has no behaviour beyond conversions, so that
// pleg, statuscache or prober can speak of pods without compiling the CRI
// client: they declare the interfaces they consume, in these types.
package kubecontainer
