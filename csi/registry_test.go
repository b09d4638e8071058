package csi_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/nodekit-dev/nodekit/csi"
	"github.com/nodekit-dev/nodekit/csi/csitest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is a csi.NodeInfo in memory.
type recorder struct {
	mu      sync.Mutex
	drivers map[string]csi.DriverInfo
	fail    error
}

func (r *recorder) InstallDriver(_ context.Context, name string, info csi.DriverInfo) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	r.drivers[name] = info
	return nil
}

func (r *recorder) UninstallDriver(_ context.Context, name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.drivers, name)
	return nil
}

func TestRegistry(t *testing.T) {
	dir := t.TempDir()
	d, err := csitest.Start(csitest.Config{Name: "fake.csi.example.com", RegistryDir: filepath.Join(dir, "reg"),
		EndpointDir: filepath.Join(dir, "fake"), NodeID: "node-1", MaxVolumes: 8, Topology: map[string]string{"topology.fake/zone": "a"}})
	require.NoError(t, err)
	defer d.Stop()
	rec := &recorder{drivers: map[string]csi.DriverInfo{}}
	r := csi.NewRegistry(csi.RegistryConfig{NodeInfo: rec})
	ctx := context.Background()

	for _, tc := range []struct {
		versions []string
		err      string
	}{
		{nil, `ValidatePlugin for CSI driver "fake.csi.example.com" failed. Plugin returned an empty list for supported versions`},
		{[]string{"0.3.0", "2.0.0"}, `None of the versions specified ["0.3.0" "2.0.0"] are supported`},
		{[]string{"0.3.0", "1.2.0"}, ""},
	} {
		err := r.ValidatePlugin("fake.csi.example.com", d.Endpoint(), tc.versions)
		if tc.err == "" {
			assert.NoError(t, err)
		} else {
			assert.ErrorContains(t, err, tc.err)
		}
	}
	_, err = r.Client("fake.csi.example.com")
	assert.EqualError(t, err, "driver name fake.csi.example.com not found in the list of registered CSI drivers []")

	require.NoError(t, r.RegisterPlugin(ctx, "fake.csi.example.com", d.Endpoint(), []string{"1.0.0"}))
	assert.Equal(t, csi.DriverInfo{NodeID: "node-1", MaxVolumes: 8, Topology: map[string]string{"topology.fake/zone": "a"}},
		rec.drivers["fake.csi.example.com"])
	assert.Equal(t, []string{"fake.csi.example.com"}, r.Drivers())
	c, err := r.Client("fake.csi.example.com")
	require.NoError(t, err)
	info, err := c.NodeGetInfo(ctx)
	require.NoError(t, err)
	assert.Equal(t, "node-1", info.NodeID)
	assert.ErrorContains(t, r.ValidatePlugin("fake.csi.example.com", d.Endpoint(), []string{"1.0.0"}),
		"Another driver with the same name is already registered with a higher supported version")

	r.DeRegisterPlugin("fake.csi.example.com", d.Endpoint())
	assert.Empty(t, rec.drivers)
	assert.Empty(t, r.Drivers())

	rec.fail = errors.New("API down")
	err = r.RegisterPlugin(ctx, "fake.csi.example.com", d.Endpoint(), []string{"1.0.0"})
	assert.EqualError(t, err, "CSI driver fake.csi.example.com: API down")
	assert.Empty(t, r.Drivers(), "a failed registration leaves it out")
}

func TestDialChecksEndpoint(t *testing.T) {
	_, err := csi.Dial("tcp://10.0.0.1:1")
	assert.ErrorContains(t, err, `csi: endpoint "tcp://10.0.0.1:1": want a unix socket's absolute path`)
}
