package nodestatus

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// ParseLabels parses --node-labels: "key=value,key2=value2".
func ParseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--node-labels: Invalid value: %q: want key=value", kv)
		}
		out[k] = v
	}
	return out, nil
}

// ParseTaints parses --register-with-taints: "key=value:Effect" or
// "key:Effect", comma-separated, as the kubelet accepts them.
func ParseTaints(s string) ([]v1.Taint, error) {
	var out []v1.Taint
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, spec := range strings.Split(s, ",") {
		spec = strings.TrimSpace(spec)
		kv, effect, ok := strings.Cut(spec, ":")
		if !ok {
			return nil, fmt.Errorf("--register-with-taints: Invalid value: %q: want key=value:Effect", spec)
		}
		switch e := v1.TaintEffect(effect); e {
		case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
		default:
			return nil, fmt.Errorf("--register-with-taints: Invalid value: %q: effect must be NoSchedule, PreferNoSchedule or NoExecute", spec)
		}
		k, v, _ := strings.Cut(kv, "=")
		if k == "" {
			return nil, fmt.Errorf("--register-with-taints: Invalid value: %q: empty key", spec)
		}
		out = append(out, v1.Taint{Key: k, Value: v, Effect: v1.TaintEffect(effect)})
	}
	return out, nil
}
