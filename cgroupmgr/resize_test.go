package cgroupmgr

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestKeepHigher(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	u64 := func(v uint64) *uint64 { return &v }
	for _, tc := range []struct {
		name          string
		quota, memory *int64
		cur           cgroupLimits
		wantQ, wantM  *int64
	}{
		{"both lower than now: kept", i64(10000), i64(100), cgroupLimits{cpuQuota: 20000, cpuPeriod: 100000, memory: 200}, i64(20000), i64(200)},
		{"both higher: the target", i64(30000), i64(300), cgroupLimits{cpuQuota: 20000, cpuPeriod: 100000, memory: 200}, i64(30000), i64(300)},
		{"none now: none until after", i64(10000), i64(100), cgroupLimits{cpuQuota: -1, cpuPeriod: 100000, memory: -1}, i64(-1), i64(-1)},
		{"another period: compared per period", i64(10000), nil, cgroupLimits{cpuQuota: 10000, cpuPeriod: 50000, memory: -1}, i64(20000), nil},
		{"no limit asked: left alone", nil, nil, cgroupLimits{cpuQuota: 20000, cpuPeriod: 100000, memory: 200}, nil, nil},
	} {
		rc := &ResourceConfig{CPUQuota: tc.quota, CPUPeriod: u64(100000), Memory: tc.memory}
		keepHigher(rc, tc.cur)
		assert.Equal(t, tc.wantQ, rc.CPUQuota, tc.name)
		assert.Equal(t, tc.wantM, rc.Memory, tc.name)
	}
}
