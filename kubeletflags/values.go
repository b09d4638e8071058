package kubeletflags

import (
	"encoding/csv"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	kubeletapis "k8s.io/kubelet/pkg/apis"
	netutils "k8s.io/utils/net"
)

// value is the flag.Value of an accepted flag: it checks the value as the
// kubelet's flag.Value of that kind (the parse-time checks; for
// quantityMap and labels also the ones the kubelet makes as it starts) and
// records that the flag was given.
type value struct {
	flag  Flag
	given map[string]bool
	last  string
	set   bool
}

func (v *value) String() string {
	if v == nil || v.given == nil { // the zero Value flag.PrintDefaults makes
		return ""
	}
	if v.set {
		return v.last
	}
	if v.flag.Default == "[]" {
		return ""
	}
	return v.flag.Default
}

func (v *value) Set(s string) error {
	if err := check(v.flag.Kind, s); err != nil {
		return err
	}
	v.last, v.set = s, true
	v.given[v.flag.Name] = true
	return nil
}

// IsBoolFlag lets a boolean flag (and --version) stand alone, as in the
// kubelet.
func (v *value) IsBoolFlag() bool {
	return v.flag.Kind == KindBool || v.flag.Kind == KindVersion
}

// Get returns the last value given, or the default.
func (v *value) Get() any { return v.String() }

// check returns nil if the kubelet's flag of that kind accepts s.
func check(kind, s string) error {
	switch kind {
	case KindString:
		return nil
	case KindBool:
		_, err := strconv.ParseBool(s)
		return numErr(err)
	case KindInt:
		_, err := strconv.ParseInt(s, 0, strconv.IntSize)
		return numErr(err)
	case KindInt32:
		_, err := strconv.ParseInt(s, 0, 32)
		return numErr(err)
	case KindInt64:
		_, err := strconv.ParseInt(s, 0, 64)
		return numErr(err)
	case KindDuration:
		_, err := time.ParseDuration(s)
		return err
	case KindStringSlice:
		if s == "" {
			return nil
		}
		_, err := csv.NewReader(strings.NewReader(s)).Read()
		return err
	case KindIP:
		if s != "" && netutils.ParseIPSloppy(s) == nil {
			return fmt.Errorf("%q is not a valid IP address", s)
		}
		return nil
	case KindMapStringString:
		return eachPair(s, "=", func(_, _ string) error { return nil })
	case KindMapStringStringNoSplit:
		if !strings.Contains(s, "=") {
			return errors.New("malformed pair, expect string=string")
		}
		return nil
	case KindLangleSeparatedMap:
		return eachPair(s, "<", func(_, _ string) error { return nil })
	case KindColonSeparatedMultimap:
		return eachPair(s, ":", func(_, _ string) error { return nil })
	case KindMapStringBool:
		return eachPair(s, "=", func(k, v string) error {
			if _, err := strconv.ParseBool(v); err != nil {
				return fmt.Errorf("invalid value of %s: %s, err: %v", k, v, err)
			}
			return nil
		})
	case KindQuantityMap:
		return eachPair(s, "=", checkReserved)
	case KindLabels:
		return checkLabels(s)
	case KindTaints:
		return checkTaints(s)
	case KindReservedMemory:
		return checkReservedMemory(s)
	case KindQuantity:
		_, err := resource.ParseQuantity(s)
		return err
	case KindLevel:
		_, err := strconv.ParseUint(s, 10, 31)
		return numErr(err)
	case KindVModule:
		return checkVModule(s)
	case KindVersion:
		if s == "raw" {
			return nil
		}
		if strings.HasPrefix(s, "v") {
			_, err := utilversion.ParseSemantic(s)
			return err
		}
		_, err := strconv.ParseBool(s)
		return numErr(err)
	}
	return fmt.Errorf("unknown kind %q", kind)
}

// numErr drops strconv's "strconv.ParseInt: parsing "x": " prefix, which
// repeats the value flag.FlagSet already quotes.
func numErr(err error) error {
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		return ne.Err
	}
	return err
}

// eachPair splits s at commas, skipping empty elements, and each element
// at the first sep, as the component-base map flags do.
func eachPair(s, sep string, fn func(k, v string) error) error {
	for _, p := range strings.Split(s, ",") {
		if p == "" {
			continue
		}
		k, v, ok := strings.Cut(p, sep)
		if !ok {
			return fmt.Errorf("malformed pair, expect string%sstring", sep)
		}
		if err := fn(strings.TrimSpace(k), strings.TrimSpace(v)); err != nil {
			return err
		}
	}
	return nil
}

// checkReserved is the kubelet's parseResourceList for one pair of
// --kube-reserved or --system-reserved.
func checkReserved(k, v string) error {
	switch k {
	case "cpu", "memory", "ephemeral-storage", "pid":
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return fmt.Errorf("failed to parse quantity %q for %q resource: %w", v, k, err)
		}
		if q.Sign() < 0 {
			return fmt.Errorf("resource quantity for %q cannot be negative: %v", k, v)
		}
		return nil
	}
	return fmt.Errorf("cannot reserve %q resource", k)
}

// checkLabels is cliflag.ConfigurationMap (a key alone has an empty value)
// and the label checks of the kubelet's ValidateKubeletFlags.
func checkLabels(s string) error {
	for _, p := range strings.Split(s, ",") {
		if p == "" {
			continue
		}
		k, v, _ := strings.Cut(p, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("invalid node label %q: %s", k, strings.Join(errs, ", "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return fmt.Errorf("invalid node label value %q: %s", v, strings.Join(errs, ", "))
		}
		if isKubernetesLabel(k) && !kubeletapis.IsKubeletLabel(k) {
			return fmt.Errorf("unknown 'kubernetes.io' or 'k8s.io' label %q: it must begin with an allowed prefix (%s) or be one of %s",
				k, strings.Join(kubeletapis.KubeletLabelNamespaces(), ", "), strings.Join(kubeletapis.KubeletLabels(), ", "))
		}
	}
	return nil
}

func isKubernetesLabel(key string) bool {
	ns, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	return ns == "kubernetes.io" || strings.HasSuffix(ns, ".kubernetes.io") || ns == "k8s.io" || strings.HasSuffix(ns, ".k8s.io")
}

// checkTaints is the kubelet's RegisterWithTaintsVar: ParseTaints of
// pkg/util/taints over the comma-separated specs ("key-" removes, and is
// ignored by the kubelet).
func checkTaints(s string) error {
	if s == "" {
		return nil
	}
	seen := map[string]bool{}
	for _, spec := range strings.Split(s, ",") {
		if trimmed, remove := strings.CutSuffix(spec, "-"); remove {
			if _, _, err := parseTaint(trimmed); err != nil {
				return err
			}
			continue
		}
		key, effect, err := parseTaint(spec)
		if err != nil {
			return err
		}
		if effect == "" {
			return fmt.Errorf("invalid taint spec: %v", spec)
		}
		if seen[effect+"\x00"+key] {
			return fmt.Errorf("duplicated taints with the same key and effect: %s:%s", key, effect)
		}
		seen[effect+"\x00"+key] = true
	}
	return nil
}

func parseTaint(st string) (key, effect string, err error) {
	parts := strings.Split(st, ":")
	switch len(parts) {
	case 1:
		key = parts[0]
	case 2:
		effect = parts[1]
		if effect != "NoSchedule" && effect != "PreferNoSchedule" && effect != "NoExecute" {
			return "", "", fmt.Errorf("invalid taint effect: %v, unsupported taint effect", effect)
		}
		kv := strings.Split(parts[0], "=")
		if len(kv) > 2 {
			return "", "", fmt.Errorf("invalid taint spec: %v", st)
		}
		key = kv[0]
		if len(kv) == 2 {
			if errs := validation.IsValidLabelValue(kv[1]); len(errs) > 0 {
				return "", "", fmt.Errorf("invalid taint spec: %v, %s", st, strings.Join(errs, "; "))
			}
		}
	default:
		return "", "", fmt.Errorf("invalid taint spec: %v", st)
	}
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return "", "", fmt.Errorf("invalid taint spec: %v, %s", st, strings.Join(errs, "; "))
	}
	return key, effect, nil
}

// checkReservedMemory is the kubelet's ReservedMemoryVar.
func checkReservedMemory(s string) error {
	if s == "" {
		return nil
	}
	for _, reservation := range strings.Split(s, ";") {
		node, types, ok := strings.Cut(reservation, ":")
		if !ok || strings.Contains(types, ":") {
			return fmt.Errorf("the reserved memory has incorrect format, expected numaNodeID:type=quantity[,type=quantity...], got %s", reservation)
		}
		if _, err := strconv.Atoi(node); err != nil {
			return fmt.Errorf("failed to convert the NUMA node ID, expected integer, got %s", node)
		}
		for _, t := range strings.Split(types, ",") {
			limit := strings.Split(t, "=")
			if len(limit) != 2 {
				return fmt.Errorf("the reserved limit has incorrect value, expected type=quantity, got %s", t)
			}
			if limit[0] != "memory" && !strings.HasPrefix(limit[0], "hugepages-") {
				return fmt.Errorf("memory type conversion error, unknown type: %q", limit[0])
			}
			if _, err := resource.ParseQuantity(limit[1]); err != nil {
				return fmt.Errorf("failed to parse the quantity, expected quantity, got %s", limit[1])
			}
		}
	}
	return nil
}

// checkVModule is component-base's --vmodule (klog's syntax).
func checkVModule(s string) error {
	for _, pat := range strings.Split(s, ",") {
		if pat == "" {
			continue
		}
		patLev := strings.Split(pat, "=")
		if len(patLev) != 2 || patLev[0] == "" || patLev[1] == "" {
			return fmt.Errorf("%q does not have the pattern=N format", pat)
		}
		if _, err := strconv.ParseUint(patLev[1], 10, 31); err != nil {
			return fmt.Errorf("parsing verbosity in %q: %v", pat, numErr(err))
		}
	}
	return nil
}
