package resources

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// The kubelet's eviction signals (pkg/kubelet/eviction/api).
const (
	SignalMemoryAvailable            = "memory.available"
	SignalAllocatableMemoryAvailable = "allocatableMemory.available"
	SignalNodeFsAvailable            = "nodefs.available"
	SignalNodeFsInodesFree           = "nodefs.inodesFree"
	SignalImageFsAvailable           = "imagefs.available"
	SignalImageFsInodesFree          = "imagefs.inodesFree"
	SignalContainerFsAvailable       = "containerfs.available"
	SignalContainerFsInodesFree      = "containerfs.inodesFree"
	SignalPIDAvailable               = "pid.available"
)

// EvictionSignals lists every signal the kubelet knows, in the order of
// the constants above.
var EvictionSignals = []string{
	SignalMemoryAvailable, SignalAllocatableMemoryAvailable,
	SignalNodeFsAvailable, SignalNodeFsInodesFree,
	SignalImageFsAvailable, SignalImageFsInodesFree,
	SignalContainerFsAvailable, SignalContainerFsInodesFree,
	SignalPIDAvailable,
}

// IsEvictionSignal reports whether s is one of EvictionSignals.
func IsEvictionSignal(s string) bool {
	for _, k := range EvictionSignals {
		if s == k {
			return true
		}
	}
	return false
}

// DefaultEvictionHard is the kubelet's --eviction-hard default on Linux
// (pkg/kubelet/eviction/defaults_linux.go, v1.34). The kubelet applies it
// only when evictionHard is not set at all: setting any hard threshold
// replaces the whole default unless mergeDefaultEvictionSettings is true.
const DefaultEvictionHard = "memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%," +
	"imagefs.available<15%,imagefs.inodesFree<5%"

// EvictionThreshold is one "signal<value" eviction threshold: an absolute
// Quantity, or a Percentage (0..1] of capacity when Quantity is nil.
type EvictionThreshold struct {
	Signal     string
	Quantity   *resource.Quantity
	Percentage float64
}

// Of is the threshold's value for a capacity (bytes, inodes or PIDs): the
// Quantity, or the Percentage of capacity rounded down, as the kubelet's
// GetThresholdQuantity.
func (t EvictionThreshold) Of(capacity int64) int64 {
	return ThresholdValue(t.Quantity, t.Percentage, capacity)
}

// ThresholdValue is q's value, or percentage of capacity rounded down when
// q is nil (the kubelet's GetThresholdQuantity).
func ThresholdValue(q *resource.Quantity, percentage float64, capacity int64) int64 {
	if q != nil {
		return q.Value()
	}
	return int64(float64(capacity) * percentage)
}

// String is the threshold in the flag's syntax, "memory.available<100Mi".
func (t EvictionThreshold) String() string {
	return t.Signal + "<" + FormatThresholdValue(t.Quantity, t.Percentage)
}

// ParseThresholdValue parses the value of one eviction statement: a
// quantity ("100Mi", "1000") or a percentage of capacity ("10%", "7.5%").
// A percentage is kept as the kubelet keeps it, a float32 divided by 100,
// and must lie within [0%, 100%]; a quantity must be within [0, 2^63). The
// error says which rule the value breaks; callers add the statement.
func ParseThresholdValue(value string) (q *resource.Quantity, percentage float64, err error) {
	if p, isPct := strings.CutSuffix(value, "%"); isPct {
		f, err := strconv.ParseFloat(p, 32)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, 0, fmt.Errorf("%q is not a percentage", value)
		}
		if f < 0 || f > 100 {
			return nil, 0, fmt.Errorf("percentage %s must be within [0%%, 100%%]", value)
		}
		pct := float64(float32(f) / 100)
		if pct == 0 {
			pct = 0 // not -0
		}
		return nil, pct, nil
	}
	// resource.ParseQuantity takes minutes over "1e-405555555": no
	// threshold needs more than 64 characters or an exponent beyond 30.
	if i := strings.LastIndexAny(value, "eE"); len(value) > 64 || i >= 0 && !saneExponent(value[i+1:]) {
		return nil, 0, fmt.Errorf("quantity %.64s is out of range", value)
	}
	v, err := resource.ParseQuantity(value)
	if err != nil {
		return nil, 0, fmt.Errorf("%q is neither a quantity nor a percentage", value)
	}
	if v.Sign() < 0 {
		return nil, 0, fmt.Errorf("quantity %s must not be negative", value)
	}
	if v.Cmp(maxQuantity) > 0 {
		return nil, 0, fmt.Errorf("quantity %s is too large (at most %s)", value, maxQuantity.String())
	}
	return &v, 0, nil
}

func saneExponent(s string) bool {
	exp, err := strconv.Atoi(s)
	return err != nil || exp >= -30 && exp <= 30 // not a number: a suffix (E, Ei), ParseQuantity judges
}

var maxQuantity = *resource.NewQuantity(math.MaxInt64, resource.DecimalSI)

// FormatThresholdValue is the inverse of ParseThresholdValue: q's
// canonical form, or the shortest percentage that parses back to exactly
// percentage (never "0%" or "100%", which the threshold flags ignore:
// "0.0%" and "100.0%").
func FormatThresholdValue(q *resource.Quantity, percentage float64) string {
	if q != nil {
		return q.String()
	}
	want := float32(percentage)
	// The shortest decimal v with float32(v)/100 == want, as the parser
	// computes it; else the float32 next to want*100 that gives it.
	v := want * 100
	for prec := 1; prec <= 9; prec++ {
		c, err := strconv.ParseFloat(strconv.FormatFloat(float64(want)*100, 'g', prec, 64), 32)
		if err == nil && float32(c)/100 == want {
			v = float32(c)
			break
		}
	}
	for i := 0; i < 8 && v/100 != want; i++ {
		if v/100 < want {
			v = math.Nextafter32(v, float32(math.Inf(1)))
		} else {
			v = math.Nextafter32(v, float32(math.Inf(-1)))
		}
	}
	s := strconv.FormatFloat(float64(v), 'f', -1, 32)
	if s == "0" || s == "100" {
		s += ".0"
	}
	return s + "%"
}
