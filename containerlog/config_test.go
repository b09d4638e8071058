package containerlog_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodekit-dev/nodekit/containerlog"
)

func TestNewManagerDefaults(t *testing.T) {
	m, err := containerlog.NewManager(containerlog.Config{Runtime: newFakeRuntime()})
	require.NoError(t, err)
	cfg := m.Config()
	assert.Equal(t, "10Mi", cfg.MaxSize.String())
	assert.Equal(t, 5, cfg.MaxFiles)
	assert.Equal(t, 1, cfg.MaxWorkers)
	assert.Equal(t, 10*time.Second, cfg.MonitorInterval)
	assert.NotNil(t, cfg.Clock)
}

func TestNewManagerRefuses(t *testing.T) {
	rt := newFakeRuntime()
	for _, tc := range []struct {
		name string
		cfg  containerlog.Config
		want string
	}{
		{"no runtime", containerlog.Config{},
			"containerlog: Config.Runtime: Required value"},
		{"fraction of a byte", containerlog.Config{Runtime: rt, MaxSize: resource.MustParse("1500m")},
			`containerlog: Config.MaxSize: Invalid value: "1500m": invalid max log size`},
		{"one file", containerlog.Config{Runtime: rt, MaxFiles: 1},
			"containerlog: Config.MaxFiles: Invalid value: 1: invalid configuration: containerLogMaxFiles must be greater than 1"},
		{"negative files", containerlog.Config{Runtime: rt, MaxFiles: -2},
			"containerlog: Config.MaxFiles: Invalid value: -2: invalid configuration: containerLogMaxFiles must be greater than 1"},
		{"negative workers", containerlog.Config{Runtime: rt, MaxWorkers: -1},
			"containerlog: Config.MaxWorkers: Invalid value: -1: invalid configuration: containerLogMaxWorkers must be greater than or equal to 1"},
		{"interval under 3s", containerlog.Config{Runtime: rt, MonitorInterval: 2999 * time.Millisecond},
			"containerlog: Config.MonitorInterval: Invalid value: 2.999s: invalid configuration: containerLogMonitorInterval must be a positive time duration greater than or equal to 3s"},
		{"negative interval", containerlog.Config{Runtime: rt, MonitorInterval: -time.Second},
			"containerlog: Config.MonitorInterval: Invalid value: -1s: invalid configuration: containerLogMonitorInterval must be a positive time duration greater than or equal to 3s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := containerlog.NewManager(tc.cfg)
			assert.EqualError(t, err, tc.want)
		})
	}
}

func TestNewManagerAccepts(t *testing.T) {
	rt := newFakeRuntime()
	for _, tc := range []struct {
		name string
		cfg  containerlog.Config
	}{
		{"kubelet minimum", containerlog.Config{Runtime: rt, MaxFiles: 2, MaxWorkers: 1, MonitorInterval: 3 * time.Second}},
		{"rotation disabled", containerlog.Config{Runtime: rt, MaxSize: resource.MustParse("-1")}},
		{"bytes", containerlog.Config{Runtime: rt, MaxSize: *resource.NewQuantity(1<<20, resource.BinarySI)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := containerlog.NewManager(tc.cfg)
			assert.NoError(t, err)
		})
	}
}
