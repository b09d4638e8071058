package resources

import (
	"fmt"
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

// ParseThresholds parses the kubelet's --eviction-hard and --eviction-soft
// form, "memory.available<100Mi,nodefs.available<10%", with its rules:
// every signal of EvictionSignals, the only operator "<", a positive
// quantity or a percentage within [0%, 100%]; "0%" and "100%" are dropped
// (the kubelet's way to switch a signal off); empty items are skipped and
// a signal given twice keeps the last value (the flag is a map), at the
// place of the first. flag names the flag in errors, which quote the bad
// item and say what is wrong with it. The result holds all signals:
// allocatable uses memory.available and nodefs.available of it, package
// eviction all.
func ParseThresholds(flag, s string) ([]EvictionThreshold, error) {
	var out []EvictionThreshold
	at := map[string]int{}
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			continue
		}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%s: Invalid value: %q: %s", flag, part, fmt.Sprintf(format, args...))
		}
		sig, val, ok := strings.Cut(part, "<")
		if !ok {
			if i := strings.IndexAny(part, "<>=!"); i >= 0 {
				op := part[i:]
				op = op[:len(op)-len(strings.TrimLeft(op, "<>=!"))]
				return nil, bad("unsupported operator %q: the only operator is \"<\"", op)
			}
			return nil, bad("want signal<quantity or signal<percentage%%")
		}
		sig, val = strings.TrimSpace(sig), strings.TrimSpace(val)
		if !IsEvictionSignal(sig) {
			return nil, bad("unknown signal %q (known: %s)", sig, strings.Join(EvictionSignals, ", "))
		}
		if strings.HasPrefix(val, "=") {
			return nil, bad("unsupported operator \"<=\": the only operator is \"<\"")
		}
		if val == "0%" || val == "100%" {
			if i, dup := at[sig]; dup { // the last value wins: this one switches it off
				out = append(out[:i], out[i+1:]...)
				delete(at, sig)
				for s, j := range at {
					if j > i {
						at[s] = j - 1
					}
				}
			}
			continue
		}
		q, pct, err := ParseThresholdValue(val)
		if err != nil {
			return nil, bad("%s", err.Error())
		}
		if q != nil && q.Sign() == 0 {
			return nil, bad("quantity %s must be positive", val)
		}
		t := EvictionThreshold{Signal: sig, Quantity: q, Percentage: pct}
		if i, dup := at[sig]; dup {
			out[i] = t
			continue
		}
		at[sig] = len(out)
		out = append(out, t)
	}
	return out, nil
}

// FormatThresholds is the inverse of ParseThresholds:
// "memory.available<100Mi,nodefs.available<10%".
func FormatThresholds(ts []EvictionThreshold) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.String()
	}
	return strings.Join(parts, ",")
}
