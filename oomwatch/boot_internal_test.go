package oomwatch

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The monotonic clock never runs ahead of /proc/uptime (CLOCK_BOOTTIME,
// which counts suspend too), so the boot time is between now less the
// uptime and now.
func TestBootTime(t *testing.T) {
	now := time.Now()
	boot, err := bootTime(now)
	require.NoError(t, err)
	b, err := os.ReadFile("/proc/uptime")
	require.NoError(t, err)
	uptime, err := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	require.NoError(t, err)
	assert.True(t, boot.Before(now), "boot %s, now %s", boot, now)
	earliest := now.Add(-time.Duration(uptime*float64(time.Second)) - time.Second) // uptime is in 1/100 s
	assert.False(t, boot.Before(earliest), "boot %s before %s", boot, earliest)
}
