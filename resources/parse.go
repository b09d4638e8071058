package resources

import (
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ParseResourceList parses the kubelet's --kube-reserved and
// --system-reserved form, "cpu=200m,memory=500Mi,pid=1000"; flag names the
// flag in errors.
func ParseResourceList(flag, s string) (v1.ResourceList, error) {
	out := v1.ResourceList{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return nil, fmt.Errorf("%s: Invalid value: %q: want name=quantity", flag, kv)
		}
		switch name := v1.ResourceName(k); name {
		case v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage, ResourcePID:
			q, err := resource.ParseQuantity(v)
			if err != nil || q.Sign() < 0 {
				return nil, fmt.Errorf("%s: Invalid value: %q: %s must be a non-negative quantity", flag, kv, k)
			}
			out[name] = q
		default:
			return nil, fmt.Errorf("%s: Invalid value: %q: only cpu, memory, ephemeral-storage and pid", flag, kv)
		}
	}
	return out, nil
}

// ParseThresholds parses --eviction-hard, "memory.available<100Mi,
// nodefs.available<10%", keeping the signals allocatable subtracts.
func ParseThresholds(flag, s string) ([]EvictionThreshold, error) {
	var out []EvictionThreshold
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		sig, val, ok := strings.Cut(strings.TrimSpace(part), "<")
		if !ok {
			return nil, fmt.Errorf("%s: Invalid value: %q: want signal<quantity or signal<percent%%", flag, part)
		}
		if _, known := signalResource[sig]; !known {
			continue // imagefs.*, *.inodesFree: eviction's, not allocatable's
		}
		t := EvictionThreshold{Signal: sig}
		if p, isPct := strings.CutSuffix(val, "%"); isPct {
			f, err := strconv.ParseFloat(p, 64)
			if err != nil || f < 0 || f > 100 {
				return nil, fmt.Errorf("%s: Invalid value: %q: percentage must be within [0, 100]", flag, part)
			}
			t.Percentage = f / 100
		} else {
			q, err := resource.ParseQuantity(val)
			if err != nil || q.Sign() < 0 {
				return nil, fmt.Errorf("%s: Invalid value: %q: must be a non-negative quantity", flag, part)
			}
			t.Quantity = &q
		}
		out = append(out, t)
	}
	return out, nil
}
