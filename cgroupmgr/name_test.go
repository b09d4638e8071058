package cgroupmgr

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodekit-dev/nodekit/podpath"
)

func TestCgroupNameConversions(t *testing.T) {
	for _, tc := range []struct {
		name     CgroupName
		cgroupfs string
		systemd  string
	}{
		{CgroupName{}, "/", "/"},
		{CgroupName{"kubepods"}, "/kubepods", "/kubepods.slice"},
		{CgroupName{"kubepods", "burstable"}, "/kubepods/burstable", "/kubepods.slice/kubepods-burstable.slice"},
		{CgroupName{"kubepods", "burstable", "pod1234-abcd-5678"}, "/kubepods/burstable/pod1234-abcd-5678",
			"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_abcd_5678.slice"},
		{CgroupName{"kubepods", "pod12-34"}, "/kubepods/pod12-34", "/kubepods.slice/kubepods-pod12_34.slice"},
	} {
		t.Run(tc.cgroupfs, func(t *testing.T) {
			assert.Equal(t, tc.cgroupfs, tc.name.ToCgroupfs())
			assert.Equal(t, tc.systemd, tc.name.ToSystemd())
			assert.Equal(t, tc.name, ParseCgroupfsToCgroupName(tc.cgroupfs))
			assert.Equal(t, tc.name, ParseSystemdToCgroupName(tc.systemd))
		})
	}
}

func TestNewCgroupNameRefusesBadComponents(t *testing.T) {
	for _, c := range []string{"", ".", "..", "a/b", "a_b", "a\x00b", strings.Repeat("x", 256)} {
		_, err := NewCgroupName(RootCgroupName, "kubepods", c)
		require.Error(t, err, "component %q", c)
		assert.Contains(t, err.Error(), podpath.Quote(c))
	}
	n, err := NewCgroupName(CgroupName{"kubepods"}, "burstable")
	require.NoError(t, err)
	assert.Equal(t, CgroupName{"kubepods", "burstable"}, n)
}

func TestParseCgroupRoot(t *testing.T) {
	for _, tc := range []struct {
		driver  Driver
		root    string
		want    CgroupName
		wantErr string
	}{
		{DriverCgroupfs, "/", CgroupName{}, ""},
		{DriverCgroupfs, "/nodekit-test-1/x", CgroupName{"nodekit-test-1", "x"}, ""},
		{DriverCgroupfs, "/a/../../etc", nil, `CgroupRoot "/a/../../etc"`},
		{DriverCgroupfs, "/a_b", nil, `CgroupRoot "/a_b"`},
		{DriverSystemd, "/", CgroupName{}, ""},
		{DriverSystemd, "/nodekit.slice/nodekit-test.slice", CgroupName{"nodekit", "test"}, ""},
		{DriverSystemd, "../x.slice", nil, "must not contain"},
	} {
		got, err := parseCgroupRoot(tc.driver, tc.root)
		if tc.wantErr != "" {
			require.ErrorContains(t, err, tc.wantErr)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, tc.root)
	}
}
