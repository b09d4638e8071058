package hollow_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/client-go/rest"

	"github.com/nodekit-dev/nodekit/hollow"
)

func TestNewRejectsBadConfig(t *testing.T) {
	rc := &rest.Config{Host: "https://127.0.0.1:1"}
	for _, tc := range []struct {
		name string
		cfg  hollow.Config
		want string
	}{
		{"no API server", hollow.Config{Nodes: 1}, "hollow: Config.Rest: Required value"},
		{"no nodes", hollow.Config{Rest: rc}, "hollow: Config.Nodes: Invalid value: 0: must be at least 1"},
		{"too many nodes", hollow.Config{Rest: rc, Nodes: 1 << 20}, "hollow: Config.Nodes: Invalid value: 1048576: at most 64000"},
		{"negative capacity", hollow.Config{Rest: rc, Nodes: 1, CPU: -1}, "hollow: Config.CPU: Invalid value: -1: must not be negative"},
		{"negative burst", hollow.Config{Rest: rc, Nodes: 1, Burst: -5}, "hollow: Config.Burst: Invalid value: -5: must not be negative"},
		{"negative event cache", hollow.Config{Rest: rc, Nodes: 1, EventCacheSize: -1},
			"hollow: Config.EventCacheSize: Invalid value: -1: must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := hollow.New(context.Background(), tc.cfg)
			assert.EqualError(t, err, tc.want)
		})
	}
}
