package eviction

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodekit-dev/nodekit/resources"
)

// The kubelet's eviction signals.
const (
	SignalMemoryAvailable            = resources.SignalMemoryAvailable
	SignalAllocatableMemoryAvailable = resources.SignalAllocatableMemoryAvailable
	SignalNodeFsAvailable            = resources.SignalNodeFsAvailable
	SignalNodeFsInodesFree           = resources.SignalNodeFsInodesFree
	SignalImageFsAvailable           = resources.SignalImageFsAvailable
	SignalImageFsInodesFree          = resources.SignalImageFsInodesFree
	SignalContainerFsAvailable       = resources.SignalContainerFsAvailable
	SignalContainerFsInodesFree      = resources.SignalContainerFsInodesFree
	SignalPIDAvailable               = resources.SignalPIDAvailable
)

// The resources the kubelet reclaims besides memory and ephemeral-storage.
const (
	ResourceInodes v1.ResourceName = "inodes"
	ResourcePIDs   v1.ResourceName = "pids"
)

// signalCondition and signalResource are the kubelet's signalToNodeCondition
// and signalToResource.
var (
	signalCondition = map[string]v1.NodeConditionType{
		SignalMemoryAvailable: v1.NodeMemoryPressure, SignalAllocatableMemoryAvailable: v1.NodeMemoryPressure,
		SignalNodeFsAvailable: v1.NodeDiskPressure, SignalNodeFsInodesFree: v1.NodeDiskPressure,
		SignalImageFsAvailable: v1.NodeDiskPressure, SignalImageFsInodesFree: v1.NodeDiskPressure,
		SignalContainerFsAvailable: v1.NodeDiskPressure, SignalContainerFsInodesFree: v1.NodeDiskPressure,
		SignalPIDAvailable: v1.NodePIDPressure,
	}
	signalResource = map[string]v1.ResourceName{
		SignalMemoryAvailable: v1.ResourceMemory, SignalAllocatableMemoryAvailable: v1.ResourceMemory,
		SignalNodeFsAvailable: v1.ResourceEphemeralStorage, SignalNodeFsInodesFree: ResourceInodes,
		SignalImageFsAvailable: v1.ResourceEphemeralStorage, SignalImageFsInodesFree: ResourceInodes,
		SignalContainerFsAvailable: v1.ResourceEphemeralStorage, SignalContainerFsInodesFree: ResourceInodes,
		SignalPIDAvailable: ResourcePIDs,
	}
)

// SignalCondition is the node condition a signal's thresholds drive:
// MemoryPressure, DiskPressure or PIDPressure.
func SignalCondition(signal string) v1.NodeConditionType { return signalCondition[signal] }

// SignalResource is the resource a signal's evictions reclaim: memory,
// ephemeral-storage, inodes or pids.
func SignalResource(signal string) v1.ResourceName { return signalResource[signal] }

// Value is an amount of a signal: Quantity, or Percentage (0..1) of the
// signal's capacity when Quantity is nil.
type Value struct {
	Quantity   *resource.Quantity
	Percentage float64
}

// Of is the value for a capacity, as the kubelet's GetThresholdQuantity.
func (v Value) Of(capacity int64) int64 {
	return resources.ThresholdValue(v.Quantity, v.Percentage, capacity)
}

func (v Value) String() string { return resources.FormatThresholdValue(v.Quantity, v.Percentage) }

// Threshold is one eviction threshold: it is met when the signal's
// available amount is below Value. A hard threshold (GracePeriod 0) evicts
// at once; a soft one only once it has been met for GracePeriod.
type Threshold struct {
	Signal string
	Value  Value
	// GracePeriod (--eviction-soft-grace-period) makes the threshold soft.
	GracePeriod time.Duration
	// MinReclaim (--eviction-minimum-reclaim): once met, the threshold
	// stays met until the signal is MinReclaim above Value.
	MinReclaim *Value
}

// Hard reports whether t evicts without a grace period.
func (t Threshold) Hard() bool { return t.GracePeriod == 0 }

// String is "memory.available<100Mi", with the grace period and minimum
// reclaim when set: "memory.available<1Gi (grace period 1m30s, minimum
// reclaim 500Mi)".
func (t Threshold) String() string {
	s := t.Signal + "<" + t.Value.String()
	var extra []string
	if !t.Hard() {
		extra = append(extra, "grace period "+t.GracePeriod.String())
	}
	if t.MinReclaim != nil {
		extra = append(extra, "minimum reclaim "+t.MinReclaim.String())
	}
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	return s
}

func (t Threshold) validate(field string) error {
	if !resources.IsEvictionSignal(t.Signal) {
		return fmt.Errorf("eviction: %s.Signal: Invalid value: %q: unknown signal (known: %s)", field, t.Signal,
			strings.Join(resources.EvictionSignals, ", "))
	}
	if t.GracePeriod < 0 {
		return fmt.Errorf("eviction: %s.GracePeriod: Invalid value: %s: must not be negative", field, t.GracePeriod)
	}
	for name, v := range map[string]*Value{"Value": &t.Value, "MinReclaim": t.MinReclaim} {
		if v == nil {
			continue
		}
		if v.Quantity != nil && v.Quantity.Sign() < 0 {
			return fmt.Errorf("eviction: %s.%s.Quantity: Invalid value: %s: must not be negative", field, name, v.Quantity)
		}
		if v.Quantity == nil && !(v.Percentage >= 0 && v.Percentage <= 1) {
			return fmt.Errorf("eviction: %s.%s.Percentage: Invalid value: %v: must be within [0, 1]", field, name, v.Percentage)
		}
	}
	return nil
}

// Flags are the kubelet's eviction settings in the form of its command
// line (a config file's maps joined the same way: "k<v,..." and "k=v,...").
type Flags struct {
	// Hard is --eviction-hard, "memory.available<100Mi,nodefs.available<10%".
	// Nil means not set: the kubelet's default, resources.DefaultEvictionHard.
	// Set, even to "", it replaces the whole default, unless MergeDefaults.
	Hard *string
	// Soft is --eviction-soft, in the same form; each of its signals needs
	// a grace period in SoftGracePeriod (0s makes it hard, as in the kubelet).
	Soft string
	// SoftGracePeriod is --eviction-soft-grace-period, "memory.available=1m30s".
	SoftGracePeriod string
	// MinimumReclaim is --eviction-minimum-reclaim, "imagefs.available=2Gi"
	// (a quantity, or a percentage of capacity).
	MinimumReclaim string
	// MergeDefaults is the config file's mergeDefaultEvictionSettings
	// (v1.34, default false): the default thresholds of signals Hard does
	// not name are kept.
	MergeDefaults bool
	// EnforceNodeAllocatable is --enforce-node-allocatable; nil means the
	// kubelet's default, "pods". With "pods", each hard memory.available
	// threshold also applies to allocatableMemory.available (the kubepods
	// cgroup), as the kubelet's ParseThresholdConfig adds it.
	EnforceNodeAllocatable []string
}

// DefaultThresholds are the thresholds of the zero Flags: the kubelet's
// v1.34 --eviction-hard default on Linux (memory.available<100Mi,
// nodefs.available<10%, nodefs.inodesFree<5%, imagefs.available<15%,
// imagefs.inodesFree<5%) and allocatableMemory.available<100Mi.
func DefaultThresholds() []Threshold {
	ts, err := ParseFlags(Flags{})
	if err != nil {
		panic(err) // constants
	}
	return ts
}

// HardThresholds are the hard thresholds in effect: Hard, or the
// default when it is not set, merged with the default under MergeDefaults.
// Node allocatable subtracts their memory.available.
func (f Flags) HardThresholds() ([]resources.EvictionThreshold, error) {
	hard := resources.DefaultEvictionHard
	if f.Hard != nil {
		hard = *f.Hard
		if f.MergeDefaults {
			named := map[string]bool{}
			for _, part := range strings.Split(hard, ",") {
				sig, _, _ := strings.Cut(part, "<")
				named[strings.TrimSpace(sig)] = true
			}
			for _, part := range strings.Split(resources.DefaultEvictionHard, ",") {
				if sig, _, _ := strings.Cut(part, "<"); !named[sig] {
					hard += "," + part
				}
			}
		}
	}
	return resources.ParseThresholds("--eviction-hard", hard)
}

// ParseFlags turns the kubelet's eviction flags into thresholds as its
// ParseThresholdConfig does: hard ones (with the defaults when Hard is
// nil), soft ones with their grace periods, minimum reclaims on every
// threshold of their signal, and the allocatable copies of the hard
// memory.available thresholds. Errors name the flag and the bad item.
func ParseFlags(f Flags) ([]Threshold, error) {
	hardTs, err := f.HardThresholds()
	if err != nil {
		return nil, err
	}
	softTs, err := resources.ParseThresholds("--eviction-soft", f.Soft)
	if err != nil {
		return nil, err
	}
	grace, err := parseGracePeriods(f.SoftGracePeriod)
	if err != nil {
		return nil, err
	}
	reclaim, err := parseMinimumReclaims(f.MinimumReclaim)
	if err != nil {
		return nil, err
	}
	out := make([]Threshold, 0, len(hardTs)+len(softTs)+1)
	for _, t := range hardTs {
		out = append(out, Threshold{Signal: t.Signal, Value: Value{t.Quantity, t.Percentage}})
	}
	for _, t := range softTs {
		g, ok := grace[t.Signal]
		if !ok {
			return nil, fmt.Errorf("--eviction-soft-grace-period: Required value: the soft threshold %s needs a grace period (%s=1m30s)",
				t, t.Signal)
		}
		out = append(out, Threshold{Signal: t.Signal, Value: Value{t.Quantity, t.Percentage}, GracePeriod: g})
	}
	for i := range out {
		if r, ok := reclaim[out[i].Signal]; ok {
			out[i].MinReclaim = &r
		}
	}
	enforce := f.EnforceNodeAllocatable
	if enforce == nil {
		enforce = []string{"pods"}
	}
	if slices.Contains(enforce, "pods") {
		for _, t := range out {
			if t.Signal == SignalMemoryAvailable && t.Hard() {
				t.Signal = SignalAllocatableMemoryAvailable
				out = append(out, t)
			}
		}
	}
	return out, nil
}

// mapItems splits the kubelet's MapStringString flag form, "k=v,k2=v2":
// empty items skipped, keys and values trimmed, the last value of a key
// kept.
func mapItems(flag, s string, each func(item, k, v string) error) error {
	for _, item := range strings.Split(s, ",") {
		if item == "" {
			continue
		}
		k, v, ok := strings.Cut(item, "=")
		if !ok {
			return fmt.Errorf("%s: Invalid value: %q: want signal=value", flag, item)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !resources.IsEvictionSignal(k) {
			return fmt.Errorf("%s: Invalid value: %q: unknown signal %q (known: %s)", flag, item, k,
				strings.Join(resources.EvictionSignals, ", "))
		}
		if err := each(item, k, v); err != nil {
			return fmt.Errorf("%s: Invalid value: %q: %w", flag, item, err)
		}
	}
	return nil
}

func parseGracePeriods(s string) (map[string]time.Duration, error) {
	out := map[string]time.Duration{}
	return out, mapItems("--eviction-soft-grace-period", s, func(_, k, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%q is not a duration (1m30s)", v)
		}
		if d < 0 {
			return errors.New("the grace period must not be negative")
		}
		out[k] = d
		return nil
	})
}

func parseMinimumReclaims(s string) (map[string]Value, error) {
	out := map[string]Value{}
	return out, mapItems("--eviction-minimum-reclaim", s, func(_, k, v string) error {
		q, pct, err := resources.ParseThresholdValue(v)
		if err != nil {
			return err
		}
		if q == nil && pct <= 0 {
			return fmt.Errorf("percentage %s must be positive", v)
		}
		out[k] = Value{q, pct}
		return nil
	})
}

// containerFsThresholds is the kubelet's UpdateContainerFsThresholds:
// containerfs.* thresholds follow nodefs.* when the writable layers are on
// the node's filesystem (one filesystem, or a split image filesystem), and
// imagefs.* when they are on a dedicated image filesystem; thresholds set
// for containerfs.* are replaced (warn says so).
func containerFsThresholds(ts []Threshold, imageFs, splitFs bool) (out []Threshold, warn error) {
	from := map[string]string{SignalContainerFsAvailable: SignalNodeFsAvailable, SignalContainerFsInodesFree: SignalNodeFsInodesFree}
	if imageFs && !splitFs {
		from = map[string]string{SignalContainerFsAvailable: SignalImageFsAvailable, SignalContainerFsInodesFree: SignalImageFsInodesFree}
	}
	var ignored []string
	for _, t := range ts {
		if _, derived := from[t.Signal]; derived {
			ignored = append(ignored, t.String())
			continue
		}
		out = append(out, t)
	}
	n := len(out)
	for i := 0; i < n; i++ {
		t := out[i]
		for derived, src := range map[string]string{SignalContainerFsAvailable: from[SignalContainerFsAvailable],
			SignalContainerFsInodesFree: from[SignalContainerFsInodesFree]} {
			if t.Signal == src {
				t.Signal = derived
				out = append(out, t)
			}
		}
	}
	if len(ignored) > 0 {
		warn = fmt.Errorf("eviction: containerfs thresholds follow nodefs or imagefs: ignored %s", strings.Join(ignored, ", "))
	}
	return out, warn
}
