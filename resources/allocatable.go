package resources

import (
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ResourcePID is the kubelet's pseudo-resource for process IDs.
const ResourcePID v1.ResourceName = "pid"

// signalResource: the hard-eviction signals allocatable reserves, and what
// they reserve (the kubelet's hardEvictionReservation: memory.available and
// nodefs.available only).
var signalResource = map[string]v1.ResourceName{
	SignalMemoryAvailable: v1.ResourceMemory,
	SignalNodeFsAvailable: v1.ResourceEphemeralStorage,
}

// AllocatableConfig is the node's capacity and what is held back from pods.
type AllocatableConfig struct {
	Capacity       v1.ResourceList
	KubeReserved   v1.ResourceList // --kube-reserved
	SystemReserved v1.ResourceList // --system-reserved
	// HardEvictionThresholds are the hard thresholds (ParseThresholds of
	// --eviction-hard); those of memory.available and nodefs.available are
	// held back, the other signals are not resources allocatable knows.
	HardEvictionThresholds []EvictionThreshold
}

// NodeAllocatable is what the kubelet reports as allocatable: capacity minus
// kube-reserved, system-reserved and the hard eviction thresholds, never below 0.
func NodeAllocatable(cfg AllocatableConfig) (v1.ResourceList, error) {
	return allocatable(cfg, true)
}

// PodsCgroupLimits is what the kubelet enforces on the kubepods cgroup:
// capacity minus kube- and system-reserved only, so that eviction (at the
// threshold) happens before the kernel OOM-kills at the cgroup limit.
func PodsCgroupLimits(cfg AllocatableConfig) (v1.ResourceList, error) {
	return allocatable(cfg, false)
}

func allocatable(cfg AllocatableConfig, withEviction bool) (v1.ResourceList, error) {
	for field, l := range map[string]v1.ResourceList{
		"Capacity": cfg.Capacity, "KubeReserved": cfg.KubeReserved, "SystemReserved": cfg.SystemReserved,
	} {
		if err := validateList(field, l); err != nil {
			return nil, err
		}
	}
	reserved := v1.ResourceList{}
	AddList(reserved, cfg.KubeReserved)
	AddList(reserved, cfg.SystemReserved)
	if withEviction {
		for i, t := range cfg.HardEvictionThresholds {
			q, err := thresholdQuantity(i, t, cfg.Capacity)
			if err != nil {
				return nil, err
			}
			if q != nil {
				AddList(reserved, v1.ResourceList{signalResource[t.Signal]: *q})
			}
		}
	}
	out := v1.ResourceList{}
	for name, capQ := range cfg.Capacity {
		v := capQ.DeepCopy()
		if r, ok := reserved[name]; ok {
			v.Sub(r)
		}
		if v.Sign() < 0 {
			v = *resource.NewQuantity(0, capQ.Format)
		}
		out[name] = v
	}
	return out, nil
}

func thresholdQuantity(i int, t EvictionThreshold, capacity v1.ResourceList) (*resource.Quantity, error) {
	field := fmt.Sprintf("HardEvictionThresholds[%d]", i)
	if !IsEvictionSignal(t.Signal) {
		return nil, fieldError(field+".Signal", fmt.Sprintf("%q", t.Signal), "unknown signal")
	}
	if t.Quantity != nil && t.Quantity.Sign() < 0 {
		return nil, fieldError(field+".Quantity", t.Quantity.String(), "must not be negative")
	}
	if t.Quantity == nil && (t.Percentage < 0 || t.Percentage > 1 || math.IsNaN(t.Percentage)) {
		return nil, fieldError(field+".Percentage", t.Percentage, "must be within [0, 1]")
	}
	name, ok := signalResource[t.Signal]
	if !ok {
		return nil, nil // imagefs.*, *.inodesFree, pid.available: eviction's, not allocatable's
	}
	if t.Quantity != nil {
		q := t.Quantity.DeepCopy()
		return &q, nil
	}
	c, ok := capacity[name]
	if !ok || t.Percentage == 0 {
		return nil, nil
	}
	return resource.NewQuantity(t.Of(c.Value()), resource.BinarySI), nil
}

func fieldError(field string, value any, msg string) error {
	return fmt.Errorf("resources: %s=%v: %s", field, value, msg)
}

func validateList(field string, l v1.ResourceList) error {
	for name, q := range l {
		if q.Sign() < 0 {
			return fieldError(fmt.Sprintf("%s[%s]", field, name), q.String(), "must not be negative")
		}
	}
	return nil
}

// AddList adds src to dst, resource by resource (copies, so dst shares
// nothing with src).
func AddList(dst, src v1.ResourceList) {
	for name, q := range src {
		if cur, ok := dst[name]; ok {
			cur.Add(q)
			dst[name] = cur
		} else {
			dst[name] = q.DeepCopy()
		}
	}
}
