package runtime

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// containerEnv resolves a container's environment as the kubelet does for
// what a node knows without an API server: literal values with $(VAR)
// expansion, the downward API (fieldRef) and resourceFieldRef. ConfigMap and
// Secret references need an API server and are refused by name.
func containerEnv(pod *v1.Pod, c *v1.Container, podIPs []string, hostIP string) ([]v1.EnvVar, error) {
	if len(c.EnvFrom) > 0 {
		return nil, fmt.Errorf("envFrom: not supported without an API server")
	}
	env := make([]v1.EnvVar, 0, len(c.Env))
	vars := make(map[string]string, len(c.Env))
	for i, e := range c.Env {
		val := e.Value
		switch {
		case e.ValueFrom == nil:
			val = expandVars(e.Value, vars)
		case e.ValueFrom.FieldRef != nil:
			v, err := fieldValue(pod, e.ValueFrom.FieldRef.FieldPath, podIPs, hostIP)
			if err != nil {
				return nil, fmt.Errorf("env[%d].valueFrom.fieldRef.fieldPath: %w", i, err)
			}
			val = v
		case e.ValueFrom.ResourceFieldRef != nil:
			v, err := resourceValue(c, e.ValueFrom.ResourceFieldRef)
			if err != nil {
				return nil, fmt.Errorf("env[%d].valueFrom.resourceFieldRef: %w", i, err)
			}
			val = v
		default:
			return nil, fmt.Errorf("env[%d] (%s): configMapKeyRef and secretKeyRef need an API server", i, e.Name)
		}
		vars[e.Name] = val
		env = append(env, v1.EnvVar{Name: e.Name, Value: val})
	}
	return env, nil
}

func fieldValue(pod *v1.Pod, path string, podIPs []string, hostIP string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		return hostIP, nil
	case "status.podIP":
		if len(podIPs) > 0 {
			return podIPs[0], nil
		}
		return "", nil
	case "status.podIPs":
		return strings.Join(podIPs, ","), nil
	}
	for _, m := range []struct {
		prefix string
		values map[string]string
	}{{"metadata.labels['", pod.Labels}, {"metadata.annotations['", pod.Annotations}} {
		if strings.HasPrefix(path, m.prefix) && strings.HasSuffix(path, "']") {
			return m.values[strings.TrimSuffix(strings.TrimPrefix(path, m.prefix), "']")], nil
		}
	}
	return "", fmt.Errorf("unsupported value %q", path)
}

// resourceValue is the downward API's rounding: the quantity divided by the
// divisor (default 1), rounded up.
func resourceValue(c *v1.Container, ref *v1.ResourceFieldSelector) (string, error) {
	var q resource.Quantity
	switch ref.Resource {
	case "limits.cpu":
		q = *c.Resources.Limits.Cpu()
	case "limits.memory":
		q = *c.Resources.Limits.Memory()
	case "requests.cpu":
		q = *c.Resources.Requests.Cpu()
	case "requests.memory":
		q = *c.Resources.Requests.Memory()
	case "limits.ephemeral-storage":
		q = *c.Resources.Limits.StorageEphemeral()
	case "requests.ephemeral-storage":
		q = *c.Resources.Requests.StorageEphemeral()
	default:
		return "", fmt.Errorf("resource: unsupported value %q", ref.Resource)
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	v := math.Ceil(float64(q.MilliValue()) / float64(divisor.MilliValue()))
	return strconv.FormatInt(int64(v), 10), nil
}

// expandVars replaces $(NAME) with its value when NAME is defined, turns
// $$ into $, and leaves anything else as written (the kubelet's expansion).
func expandVars(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}
