// Package fieldpath resolves the downward API: a pod's fields named by a
// fieldRef.fieldPath, and a container's resources named by a
// resourceFieldRef, as strings, with the kubelet's formatting and
// rounding. The runtime manager uses it for env, package volume for
// downwardAPI and projected volumes and subPathExpr.
//
// Pod fields are metadata.name, metadata.namespace, metadata.uid,
// metadata.labels and metadata.annotations (whole maps, one key="value"
// line per key, sorted), metadata.labels['k'] and
// metadata.annotations['k'], spec.nodeName and spec.serviceAccountName.
// Status fields (status.podIP, status.hostIP...) are known only to the
// caller that started the sandbox, so they are not here.
//
// Resources are limits.* and requests.* of cpu, memory, ephemeral-storage
// and hugepages-<size>, divided by the divisor (default 1) and rounded up;
// cpu in millicores before dividing, so "1m" gives millicores. As in the
// kubelet, an unset cpu, memory or ephemeral-storage limit reads as the
// node's allocatable (when the caller passes it).
//
// Expand is the kubelet's $(VAR) expansion ($$ escapes a $), which env
// values, command, args and volumeMounts' subPathExpr go through.
//
// # Use
//
//	name, err := fieldpath.PodField(pod, "metadata.labels['app']")
//	mem, err := fieldpath.ResourceValue(&pod.Spec.Containers[0], &v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}, allocatable)
//	dir := fieldpath.Expand("logs/$(POD_NAME)", func(name string) string { return env[name] })
package fieldpath
