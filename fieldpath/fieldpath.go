package fieldpath

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// PodField is the value of one of pod's fields, by its downward-API path.
func PodField(pod *v1.Pod, path string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return FormatMap(pod.Labels), nil
	case "metadata.annotations":
		return FormatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	}
	for _, m := range []struct {
		prefix string
		values map[string]string
	}{{"metadata.labels['", pod.Labels}, {"metadata.annotations['", pod.Annotations}} {
		if key, ok := subscript(path, m.prefix); ok {
			return m.values[key], nil
		}
	}
	return "", fmt.Errorf("unsupported value %q", path)
}

// subscript is k of prefix + "k']".
func subscript(path, prefix string) (string, bool) {
	if !strings.HasPrefix(path, prefix) || !strings.HasSuffix(path, "']") || len(path) < len(prefix)+2 {
		return "", false
	}
	return path[len(prefix) : len(path)-2], true
}

// FormatMap is the kubelet's rendering of labels and annotations in a
// file: key="value" (Go-quoted) per line, keys sorted, no final newline.
func FormatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lines := make([]string, len(keys))
	for i, k := range keys {
		lines[i] = k + "=" + strconv.Quote(m[k])
	}
	return strings.Join(lines, "\n")
}

// ResourceValue is c's resource named by ref, divided by ref.Divisor
// (default 1) and rounded up. An unset cpu, memory or ephemeral-storage
// limit is allocatable's (the node's), as in the kubelet; allocatable may
// be nil.
func ResourceValue(c *v1.Container, ref *v1.ResourceFieldSelector, allocatable v1.ResourceList) (string, error) {
	kind, name, _ := strings.Cut(ref.Resource, ".")
	rn := v1.ResourceName(name)
	if kind != "limits" && kind != "requests" || !supported(rn) {
		return "", fmt.Errorf("resource: unsupported value %q", ref.Resource)
	}
	list := c.Resources.Requests
	if kind == "limits" {
		list = c.Resources.Limits
	}
	q, set := list[rn]
	if !set && kind == "limits" && !strings.HasPrefix(name, v1.ResourceHugePagesPrefix) {
		q = allocatable[rn]
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	// cpu in millicores; bytes as they are (MilliValue would overflow for
	// exabytes).
	n, d := q.Value(), divisor.Value()
	if rn == v1.ResourceCPU {
		n, d = q.MilliValue(), divisor.MilliValue()
	}
	if d <= 0 {
		return "", fmt.Errorf("divisor: Invalid value: %q: must be at least 1 of %s's unit", divisor.String(), rn)
	}
	return strconv.FormatInt(int64(math.Ceil(float64(n)/float64(d))), 10), nil
}

func supported(rn v1.ResourceName) bool {
	switch rn {
	case v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage:
		return true
	}
	return strings.HasPrefix(string(rn), v1.ResourceHugePagesPrefix) && len(rn) > len(v1.ResourceHugePagesPrefix)
}
