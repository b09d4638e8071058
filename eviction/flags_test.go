package eviction_test

import (
	"flag"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodekit-dev/nodekit/eviction"
)

func TestFlagsAddFlags(t *testing.T) {
	var f eviction.Flags
	fs := flag.NewFlagSet("kubelet", flag.ContinueOnError)
	f.AddFlags(fs)
	require.NoError(t, fs.Parse(nil))
	assert.Nil(t, f.Hard, "not given: the default")
	require.NoError(t, fs.Parse([]string{"--eviction-hard=", "--eviction-soft=memory.available<1Gi",
		"--eviction-soft-grace-period=memory.available=1m", "--eviction-minimum-reclaim=nodefs.available=1Gi"}))
	require.NotNil(t, f.Hard)
	assert.Equal(t, "", *f.Hard, "given empty: no hard thresholds")
	ts, err := eviction.ParseFlags(f)
	require.NoError(t, err)
	var got []string
	for _, th := range ts {
		got = append(got, th.String())
	}
	assert.Equal(t, []string{"memory.available<1Gi (grace period 1m0s)"}, got)
}
