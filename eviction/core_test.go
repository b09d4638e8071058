package eviction

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
)

type pass struct {
	at    time.Duration       // after t0; the observations' time too, unless stale
	obs   map[string][2]int64 // available, capacity
	stale bool                // observations as old as the previous pass's
	act   []string            // thresholds that drive eviction
	conds []v1.NodeConditionType
}

var (
	memP  = []v1.NodeConditionType{v1.NodeMemoryPressure}
	diskP = []v1.NodeConditionType{v1.NodeDiskPressure}
)

// state.step against the kubelet's synchronize (helpers.go: thresholdsMet,
// mergeThresholds, thresholdsFirstObservedAt, nodeConditionsObservedSince,
// thresholdsMetGracePeriod, thresholdsUpdatedStats).
func TestStepKubeletRules(t *testing.T) {
	hardMem := hard(SignalMemoryAvailable, qv("100Mi"))
	softMem := Threshold{Signal: SignalMemoryAvailable, Value: qv("1Gi"), GracePeriod: time.Minute}
	hardFs := hard(SignalNodeFsAvailable, pct(0.1))
	reclaimMem := hard(SignalMemoryAvailable, qv("100Mi"))
	reclaimMem.MinReclaim = &Value{Quantity: q("400Mi")}
	mem := func(avail int64) map[string][2]int64 {
		return map[string][2]int64{SignalMemoryAvailable: {avail, 8 * Gi}}
	}
	for _, tc := range []struct {
		rule       string
		thresholds []Threshold
		passes     []pass
	}{
		{"a hard threshold met evicts at once and sets its condition", []Threshold{hardMem}, []pass{
			{at: 0, obs: mem(50 * Mi), act: []string{"memory.available<100Mi"}, conds: memP},
		}},
		{"a threshold is met only below its value (available < value)", []Threshold{hardMem}, []pass{
			{at: 0, obs: mem(100 * Mi)},
		}},
		{"a signal without observation meets no threshold", []Threshold{hardMem}, []pass{
			{at: 0, obs: map[string][2]int64{SignalNodeFsAvailable: {1, 100}}},
		}},
		{"a percentage is of the observed capacity", []Threshold{hardFs}, []pass{
			{at: 0, obs: map[string][2]int64{SignalNodeFsAvailable: {11 * Gi, 100 * Gi}}},
			{at: 10 * time.Second, obs: map[string][2]int64{SignalNodeFsAvailable: {9 * Gi, 100 * Gi}}, act: []string{"nodefs.available<10%"}, conds: diskP},
		}},
		{"a soft threshold sets the condition at once but evicts only after its grace period", []Threshold{softMem}, []pass{
			{at: 0, obs: mem(512 * Mi), conds: memP},
			{at: 30 * time.Second, obs: mem(512 * Mi), conds: memP},
			{at: 60 * time.Second, obs: mem(512 * Mi), act: []string{"memory.available<1Gi (grace period 1m0s)"}, conds: memP},
		}},
		{"a soft threshold no longer met starts its grace period again", []Threshold{softMem}, []pass{
			{at: 0, obs: mem(512 * Mi), conds: memP},
			{at: 50 * time.Second, obs: mem(2 * Gi), conds: memP},
			{at: 60 * time.Second, obs: mem(512 * Mi), conds: memP},
			{at: 110 * time.Second, obs: mem(512 * Mi), conds: memP},
			{at: 120 * time.Second, obs: mem(512 * Mi), act: []string{"memory.available<1Gi (grace period 1m0s)"}, conds: memP},
		}},
		{"the condition stays for the transition period after the last threshold met", []Threshold{hardMem}, []pass{
			{at: 0, obs: mem(50 * Mi), act: []string{"memory.available<100Mi"}, conds: memP},
			{at: 10 * time.Second, obs: mem(1 * Gi), conds: memP},
			{at: 5*time.Minute - time.Nanosecond, obs: mem(1 * Gi), conds: memP},
			{at: 5 * time.Minute, obs: mem(1 * Gi)},
		}},
		{"minimum reclaim: once met, a threshold stays met until available reaches value + minimum reclaim", []Threshold{reclaimMem}, []pass{
			{at: 0, obs: mem(50 * Mi), act: []string{"memory.available<100Mi (minimum reclaim 400Mi)"}, conds: memP},
			{at: 10 * time.Second, obs: mem(300 * Mi), act: []string{"memory.available<100Mi (minimum reclaim 400Mi)"}, conds: memP},
			{at: 20 * time.Second, obs: mem(500 * Mi), conds: memP},
			{at: 30 * time.Second, obs: mem(300 * Mi), conds: memP},
		}},
		{"no eviction on stats no newer than the last pass's; the condition holds", []Threshold{hardMem}, []pass{
			{at: 0, obs: mem(50 * Mi), act: []string{"memory.available<100Mi"}, conds: memP},
			{at: 10 * time.Second, obs: mem(50 * Mi), stale: true, conds: memP},
			{at: 20 * time.Second, obs: mem(50 * Mi), act: []string{"memory.available<100Mi"}, conds: memP},
		}},
		{"each signal drives its own condition", []Threshold{hardMem, hardFs, hard(SignalPIDAvailable, qv("100"))}, []pass{
			{at: 0, obs: map[string][2]int64{SignalMemoryAvailable: {1, 8 * Gi}, SignalNodeFsAvailable: {1, 100}, SignalPIDAvailable: {99, 4096}},
				act:   []string{"memory.available<100Mi", "nodefs.available<10%", "pid.available<100"},
				conds: []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure}},
		}},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			s := newState()
			var last time.Time
			for i, p := range tc.passes {
				at := t0.Add(p.at)
				obsAt := at
				if p.stale {
					obsAt = last
				}
				obs := Observations{}
				for sig, v := range p.obs {
					obs[sig] = Observation{Available: v[0], Capacity: v[1], Time: obsAt}
				}
				last = obsAt
				var act []string
				for _, i := range s.step(tc.thresholds, obs, at, DefaultPressureTransitionPeriod) {
					act = append(act, tc.thresholds[i].String())
				}
				assert.Equal(t, p.act, act, "pass %d at %s: thresholds acting", i, p.at)
				assert.Equal(t, p.conds, s.conditions, "pass %d at %s: conditions", i, p.at)
			}
		})
	}
}

func TestStepZeroObservationTimeIsAlwaysNew(t *testing.T) {
	s := newState()
	ts := []Threshold{hard(SignalMemoryAvailable, qv("100Mi"))}
	obs := Observations{SignalMemoryAvailable: {Available: 1, Capacity: Gi}}
	assert.Equal(t, []int{0}, s.step(ts, obs, t0, time.Minute))
	assert.Equal(t, []int{0}, s.step(ts, obs, t0.Add(time.Second), time.Minute))
}
