package eviction

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func str(s string) *string { return &s }

func strs(ts []Threshold) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.String()
	}
	return out
}

// ParseFlags against the kubelet's ParseThresholdConfig and v1.34's
// defaulting in cmd/kubelet/app (loadConfigFile).
func TestParseFlagsKubeletRules(t *testing.T) {
	for _, tc := range []struct {
		rule  string
		flags Flags
		want  []string
	}{
		{"evictionHard unset: the v1.34 Linux defaults, memory.available copied to allocatableMemory.available", Flags{},
			[]string{"memory.available<100Mi", "nodefs.available<10%", "nodefs.inodesFree<5%", "imagefs.available<15%",
				"imagefs.inodesFree<5%", "allocatableMemory.available<100Mi"}},
		{"any hard threshold replaces all defaults (mergeDefaultEvictionSettings false)", Flags{Hard: str("memory.available<1Gi")},
			[]string{"memory.available<1Gi", "allocatableMemory.available<1Gi"}},
		{"evictionHard set empty: no hard threshold at all", Flags{Hard: str("")}, []string{}},
		{"mergeDefaultEvictionSettings: the signals not given keep their default", Flags{Hard: str("memory.available<1Gi,nodefs.available<20%"), MergeDefaults: true},
			[]string{"memory.available<1Gi", "nodefs.available<20%", "nodefs.inodesFree<5%", "imagefs.available<15%",
				"imagefs.inodesFree<5%", "allocatableMemory.available<1Gi"}},
		{"mergeDefaultEvictionSettings: a signal switched off with 0% stays off", Flags{Hard: str("imagefs.available<0%,imagefs.inodesFree<100%"), MergeDefaults: true},
			[]string{"memory.available<100Mi", "nodefs.available<10%", "nodefs.inodesFree<5%", "allocatableMemory.available<100Mi"}},
		{"soft thresholds take their grace period", Flags{Hard: str(""), Soft: "memory.available<1.5Gi,nodefs.available<15%",
			SoftGracePeriod: "memory.available=1m30s, nodefs.available = 2m"},
			[]string{"memory.available<1536Mi (grace period 1m30s)", "nodefs.available<15% (grace period 2m0s)"}},
		{"a grace period without soft threshold is ignored", Flags{Hard: str(""), SoftGracePeriod: "pid.available=1m"}, []string{}},
		{"a soft memory threshold is not copied to allocatable", Flags{Hard: str(""), Soft: "memory.available<1Gi", SoftGracePeriod: "memory.available=1m"},
			[]string{"memory.available<1Gi (grace period 1m0s)"}},
		{"minimum reclaim goes on every threshold of its signal", Flags{Hard: str("memory.available<100Mi"), Soft: "memory.available<1Gi",
			SoftGracePeriod: "memory.available=1m", MinimumReclaim: "memory.available=500Mi,imagefs.available=2%"},
			[]string{"memory.available<100Mi (minimum reclaim 500Mi)", "memory.available<1Gi (grace period 1m0s, minimum reclaim 500Mi)",
				"allocatableMemory.available<100Mi (minimum reclaim 500Mi)"}},
		{"without pods in --enforce-node-allocatable, no allocatable threshold", Flags{Hard: str("memory.available<1Gi"), EnforceNodeAllocatable: []string{"none"}},
			[]string{"memory.available<1Gi"}},
		{"a grace period of 0s makes a soft threshold hard", Flags{Hard: str(""), Soft: "memory.available<1Gi", SoftGracePeriod: "memory.available=0s"},
			[]string{"memory.available<1Gi", "allocatableMemory.available<1Gi"}},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			ts, err := ParseFlags(tc.flags)
			require.NoError(t, err)
			assert.Equal(t, tc.want, strs(ts))
		})
	}
	assert.Equal(t, strs(DefaultThresholds())[:5], []string{"memory.available<100Mi", "nodefs.available<10%",
		"nodefs.inodesFree<5%", "imagefs.available<15%", "imagefs.inodesFree<5%"})
}

func TestParseFlagsErrorsNameTheBadPart(t *testing.T) {
	for _, tc := range []struct {
		flags Flags
		want  string
	}{
		{Flags{Hard: str("memory.free<1Gi")}, `--eviction-hard: Invalid value: "memory.free<1Gi": unknown signal "memory.free"`},
		{Flags{Hard: str("memory.available>1Gi")}, `--eviction-hard: Invalid value: "memory.available>1Gi": unsupported operator ">"`},
		{Flags{Hard: str("nodefs.available<110%")}, `--eviction-hard: Invalid value: "nodefs.available<110%": percentage 110% must be within [0%, 100%]`},
		{Flags{Soft: "memory.available<x"}, `--eviction-soft: Invalid value: "memory.available<x": "x" is neither a quantity nor a percentage`},
		{Flags{Soft: "memory.available<1Gi"}, `--eviction-soft-grace-period: Required value: the soft threshold memory.available<1Gi needs a grace period (memory.available=1m30s)`},
		{Flags{Soft: "memory.available<1Gi", SoftGracePeriod: "memory.available=soon"}, `--eviction-soft-grace-period: Invalid value: "memory.available=soon": "soon" is not a duration (1m30s)`},
		{Flags{SoftGracePeriod: "memory.available=-1m"}, `--eviction-soft-grace-period: Invalid value: "memory.available=-1m": the grace period must not be negative`},
		{Flags{SoftGracePeriod: "memory=1m"}, `--eviction-soft-grace-period: Invalid value: "memory=1m": unknown signal "memory"`},
		{Flags{SoftGracePeriod: "memory.available:1m"}, `--eviction-soft-grace-period: Invalid value: "memory.available:1m": want signal=value`},
		{Flags{MinimumReclaim: "imagefs.available=0%"}, `--eviction-minimum-reclaim: Invalid value: "imagefs.available=0%": percentage 0% must be positive`},
		{Flags{MinimumReclaim: "imagefs.available=-2Gi"}, `--eviction-minimum-reclaim: Invalid value: "imagefs.available=-2Gi": quantity -2Gi must not be negative`},
		{Flags{MinimumReclaim: "images=2Gi"}, `--eviction-minimum-reclaim: Invalid value: "images=2Gi": unknown signal "images"`},
	} {
		_, err := ParseFlags(tc.flags)
		require.Error(t, err, tc.want)
		assert.Contains(t, err.Error(), tc.want)
	}
}

// The kubelet's UpdateContainerFsThresholds.
func TestContainerFsThresholdsFollowTheirFilesystem(t *testing.T) {
	base, err := ParseFlags(Flags{Hard: str("nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%,imagefs.inodesFree<4%,containerfs.available<1%"),
		Soft: "nodefs.available<20%", SoftGracePeriod: "nodefs.available=1m"})
	require.NoError(t, err)
	for _, tc := range []struct {
		rule           string
		imageFs, split bool
		want           []string
	}{
		{"one filesystem: containerfs is nodefs", false, false, []string{"containerfs.available<10%", "containerfs.inodesFree<5%", "containerfs.available<20% (grace period 1m0s)"}},
		{"writable layers on the node's filesystem (split): containerfs is nodefs", true, true, []string{"containerfs.available<10%", "containerfs.inodesFree<5%", "containerfs.available<20% (grace period 1m0s)"}},
		{"dedicated imagefs with the writable layers: containerfs is imagefs", true, false, []string{"containerfs.available<15%", "containerfs.inodesFree<4%"}},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			out, warn := containerFsThresholds(base, tc.imageFs, tc.split)
			assert.EqualError(t, warn, "eviction: containerfs thresholds follow nodefs or imagefs: ignored containerfs.available<1%")
			var got []string
			for _, t := range out {
				if t.Signal == SignalContainerFsAvailable || t.Signal == SignalContainerFsInodesFree {
					got = append(got, t.String())
				}
			}
			assert.Equal(t, tc.want, got)
			assert.Len(t, out, len(base)-1+len(tc.want))
		})
	}
}

func TestThresholdValidation(t *testing.T) {
	for _, tc := range []struct {
		t    Threshold
		want string
	}{
		{Threshold{Signal: "memory"}, `eviction: Config.Thresholds[0].Signal: Invalid value: "memory": unknown signal`},
		{Threshold{Signal: SignalMemoryAvailable, GracePeriod: -time.Second}, "Config.Thresholds[0].GracePeriod: Invalid value: -1s: must not be negative"},
		{Threshold{Signal: SignalMemoryAvailable, Value: pct(1.5)}, "Config.Thresholds[0].Value.Percentage: Invalid value: 1.5: must be within [0, 1]"},
		{Threshold{Signal: SignalMemoryAvailable, Value: qv("-1")}, "Config.Thresholds[0].Value.Quantity: Invalid value: -1: must not be negative"},
		{Threshold{Signal: SignalMemoryAvailable, MinReclaim: &Value{Percentage: -0.1}}, "Config.Thresholds[0].MinReclaim.Percentage: Invalid value: -0.1"},
	} {
		assert.ErrorContains(t, tc.t.validate("Config.Thresholds[0]"), tc.want)
	}
}
