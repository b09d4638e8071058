package eviction

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// conditionOrder is the order of the pressure conditions everywhere
// (the kubelet's order comes from a map).
var conditionOrder = []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure}

// state is what the kubelet's eviction manager remembers between passes;
// step is the pure part of its synchronize. Thresholds are named by their
// index in the configured list.
type state struct {
	// firstMet: when each threshold now met was first met in a row.
	firstMet map[int]time.Time
	// conditionLastMet: when a threshold of each condition was last met.
	conditionLastMet map[v1.NodeConditionType]time.Time
	// met: thresholds met past their grace period, kept until their
	// minimum reclaim is satisfied too.
	met []int
	// last: the previous pass's observations.
	last Observations
	// conditions reported: met within the pressure transition period.
	conditions []v1.NodeConditionType
}

func newState() *state {
	return &state{firstMet: map[int]time.Time{}, conditionLastMet: map[v1.NodeConditionType]time.Time{}}
}

// thresholdsMet returns the thresholds among idx whose signal is below
// their value (plus their minimum reclaim with enforceMinReclaim); a
// signal without observation meets nothing.
func thresholdsMet(ts []Threshold, idx []int, obs Observations, enforceMinReclaim bool) []int {
	var out []int
	for _, i := range idx {
		t := &ts[i]
		o, ok := obs[t.Signal]
		if !ok {
			continue
		}
		q := t.Value.Of(o.Capacity)
		if enforceMinReclaim && t.MinReclaim != nil {
			q += t.MinReclaim.Of(o.Capacity)
		}
		if q > o.Available {
			out = append(out, i)
		}
	}
	return out
}

func allIndexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// step takes one pass's observations at now and returns the thresholds
// that drive eviction: met past their grace period (or not yet reclaimed
// down to their minimum) with a reading newer than the last pass's. It
// updates the conditions: each is reported while one of its thresholds
// was met, grace period or not, within transition.
func (s *state) step(ts []Threshold, obs Observations, now time.Time, transition time.Duration) []int {
	met := thresholdsMet(ts, allIndexes(len(ts)), obs, false)
	if len(s.met) > 0 {
		for _, i := range thresholdsMet(ts, s.met, obs, true) {
			if !containsInt(met, i) {
				met = append(met, i)
			}
		}
	}
	firstMet := make(map[int]time.Time, len(met))
	for _, i := range met {
		if at, ok := s.firstMet[i]; ok {
			firstMet[i] = at
		} else {
			firstMet[i] = now
		}
	}
	for _, i := range met {
		s.conditionLastMet[signalCondition[ts[i].Signal]] = now
	}
	var conditions []v1.NodeConditionType
	for _, c := range conditionOrder {
		if at, ok := s.conditionLastMet[c]; ok && now.Sub(at) < transition {
			conditions = append(conditions, c)
		}
	}
	s.conditions = conditions
	var act []int
	for _, i := range met {
		if now.Sub(firstMet[i]) >= ts[i].GracePeriod {
			act = append(act, i)
		}
	}
	s.firstMet, s.met = firstMet, act
	var updated []int
	for _, i := range act {
		o, ok := obs[ts[i].Signal]
		if !ok {
			continue
		}
		last, seen := s.last[ts[i].Signal]
		if !seen || o.Time.IsZero() || o.Time.After(last.Time) {
			updated = append(updated, i)
		}
	}
	s.last = obs
	return updated
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func hasCondition(cs []v1.NodeConditionType, c v1.NodeConditionType) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}
