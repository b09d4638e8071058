package resources

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseResourceListAndThresholds(t *testing.T) {
	l, err := ParseResourceList("--kube-reserved", "cpu=200m, memory=500Mi,pid=1000")
	require.NoError(t, err)
	assert.Equal(t, rl("cpu", "200m", "memory", "500Mi", "pid", "1000"), l)
	for _, bad := range []string{"cpu", "gpu=1", "memory=-1", "cpu=lots"} {
		_, err := ParseResourceList("--kube-reserved", bad)
		assert.ErrorContains(t, err, "--kube-reserved: Invalid value", bad)
	}
	ts, err := ParseThresholds("--eviction-hard", "memory.available<200Mi,nodefs.available<5%,imagefs.available<15%")
	require.NoError(t, err)
	require.Len(t, ts, 3, "all signals; allocatable keeps memory and nodefs")
	assert.Equal(t, "200Mi", ts[0].Quantity.String())
	assert.InDelta(t, 0.05, ts[1].Percentage, 1e-9)
	assert.Equal(t, SignalImageFsAvailable, ts[2].Signal)
	for _, bad := range []string{"memory.available=1Gi", "nodefs.available<150%", "memory.available<-1"} {
		_, err := ParseThresholds("--eviction-hard", bad)
		assert.ErrorContains(t, err, "--eviction-hard: Invalid value", bad)
	}
	alloc, err := NodeAllocatable(AllocatableConfig{Capacity: rl("memory", "1Gi", "pid", "1000"), HardEvictionThresholds: ts})
	require.NoError(t, err)
	mem := alloc[v1.ResourceMemory]
	assert.Equal(t, "824Mi", mem.String())
	pid := alloc[ResourcePID]
	assert.Equal(t, int64(1000), pid.Value(), "imagefs is eviction's, not allocatable's")
}

// The kubelet's parseThresholdStatement rules, and its flag's map rules
// (cliflag.LangleSeparatedMapStringString).
func TestParseThresholdsKubeletRules(t *testing.T) {
	for _, tc := range []struct {
		rule, in, want string
	}{
		{"every signal is known", "memory.available<1Gi,allocatableMemory.available<1Gi,nodefs.available<10%,nodefs.inodesFree<5%," +
			"imagefs.available<15%,imagefs.inodesFree<5%,containerfs.available<10%,containerfs.inodesFree<5%,pid.available<100",
			"memory.available<1Gi,allocatableMemory.available<1Gi,nodefs.available<10%,nodefs.inodesFree<5%," +
				"imagefs.available<15%,imagefs.inodesFree<5%,containerfs.available<10%,containerfs.inodesFree<5%,pid.available<100"},
		{"0% and 100% switch a signal off", "memory.available<0%,nodefs.available<100%,pid.available<10", "pid.available<10"},
		{"100.0% is a threshold, not the off switch", "nodefs.available<100.0%", "nodefs.available<100.0%"},
		{"empty items are skipped, keys and values trimmed", ", memory.available < 1Gi ,,", "memory.available<1Gi"},
		{"a signal given twice keeps the last value", "memory.available<1Gi,nodefs.available<5%,memory.available<2Gi", "memory.available<2Gi,nodefs.available<5%"},
		{"the last value may switch it off", "memory.available<1Gi,nodefs.available<5%,memory.available<0%", "nodefs.available<5%"},
		{"percentages keep their decimals", "nodefs.available<7.5%", "nodefs.available<7.5%"},
		{"quantities take their canonical form", "memory.available<1024Mi", "memory.available<1Gi"},
		{"empty", "", ""},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			ts, err := ParseThresholds("--eviction-hard", tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, FormatThresholds(ts))
		})
	}
}

func TestParseThresholdsErrorsNameTheBadPart(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"memory.available", `"memory.available": want signal<quantity or signal<percentage%`},
		{"memory.available>1Gi", `"memory.available>1Gi": unsupported operator ">"`},
		{"memory.available>=1Gi", `unsupported operator ">="`},
		{"memory.available<=1Gi", `unsupported operator "<="`},
		{"memory.available=1Gi", `unsupported operator "="`},
		{"memory.free<1Gi", `"memory.free<1Gi": unknown signal "memory.free" (known: memory.available, allocatableMemory.available`},
		{"memory.available<lots", `"memory.available<lots": "lots" is neither a quantity nor a percentage`},
		{"memory.available<", `"" is neither a quantity nor a percentage`},
		{"memory.available<-1Mi", `quantity -1Mi must not be negative`},
		{"memory.available<0", `quantity 0 must be positive`},
		{"nodefs.inodesFree<1000000000000000000000", `quantity 1000000000000000000000 is too large (at most 9223372036854775807)`},
		{"nodefs.available<1e-405555555", `quantity 1e-405555555 is out of range`},
		{"nodefs.available<101%", `percentage 101% must be within [0%, 100%]`},
		{"nodefs.available<-1%", `percentage -1% must be within [0%, 100%]`},
		{"nodefs.available<NaN%", `"NaN%" is not a percentage`},
		{"nodefs.available<ten%", `"ten%" is not a percentage`},
		{"memory.available<1Gi,pid.available<x", `"pid.available<x"`},
	} {
		_, err := ParseThresholds("--eviction-soft", tc.in)
		require.Error(t, err, tc.in)
		assert.Contains(t, err.Error(), "--eviction-soft: Invalid value: ", tc.in)
		assert.Contains(t, err.Error(), tc.want, tc.in)
	}
}

func TestFormatThresholdValueRoundTripsPercentages(t *testing.T) {
	for _, in := range []string{"10%", "5%", "15%", "7.5%", "0.1%", "33.333%", "99.99999%", "0.0%", "100.0%", "1e-3%"} {
		q, pct, err := ParseThresholdValue(in)
		require.NoError(t, err, in)
		require.Nil(t, q)
		_, again, err := ParseThresholdValue(FormatThresholdValue(nil, pct))
		require.NoError(t, err)
		assert.Equal(t, pct, again, in)
	}
}

func FuzzParseThresholds(f *testing.F) {
	for _, s := range []string{DefaultEvictionHard, "memory.available<1Gi", "nodefs.available<7.5%,nodefs.available<0%",
		"pid.available<1000,imagefs.inodesFree<100.0%", " , memory.available < 1e3 ", "memory.available<=1", "x<1",
		"nodefs.available<1e-40%", "memory.available<1.5", "memory.available<0.001m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ts, err := ParseThresholds("--eviction-hard", s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--eviction-hard: Invalid value: ") {
				t.Fatalf("error without the flag and the bad part: %v", err)
			}
			return
		}
		out := FormatThresholds(ts)
		again, err := ParseThresholds("--eviction-hard", out)
		if err != nil {
			t.Fatalf("%q was accepted as %q, which is refused: %v", s, out, err)
		}
		if len(again) != len(ts) {
			t.Fatalf("%q -> %q: %d thresholds, then %d", s, out, len(ts), len(again))
		}
		for i := range ts {
			a, b := ts[i], again[i]
			if a.Signal != b.Signal || a.Percentage != b.Percentage || (a.Quantity == nil) != (b.Quantity == nil) ||
				(a.Quantity != nil && a.Quantity.Cmp(*b.Quantity) != 0) {
				t.Fatalf("%q -> %q: %v became %v", s, out, a, b)
			}
		}
		if FormatThresholds(again) != out {
			t.Fatalf("%q -> %q -> %q", s, out, FormatThresholds(again))
		}
	})
}

func TestIsCriticalPod(t *testing.T) {
	prio := func(p int32) *int32 { return &p }
	for _, tc := range []struct {
		rule string
		pod  v1.Pod
		want bool
	}{
		{"an API pod without priority is not", v1.Pod{}, false},
		{"a static pod is (config.source file)", v1.Pod{ObjectMeta: meta("kubernetes.io/config.source", "file")}, true},
		{"an API pod is not for its config.source", v1.Pod{ObjectMeta: meta("kubernetes.io/config.source", "api")}, false},
		{"a mirror pod is", v1.Pod{ObjectMeta: meta("kubernetes.io/config.mirror", "abc")}, true},
		{"system-cluster-critical's priority is", v1.Pod{Spec: v1.PodSpec{Priority: prio(2000000000)}}, true},
		{"system-node-critical's priority is", v1.Pod{Spec: v1.PodSpec{Priority: prio(2000001000)}}, true},
		{"just below is not", v1.Pod{Spec: v1.PodSpec{Priority: prio(1999999999)}}, false},
	} {
		assert.Equal(t, tc.want, IsCriticalPod(&tc.pod), tc.rule)
	}
}

func meta(k, v string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Annotations: map[string]string{k: v}}
}
