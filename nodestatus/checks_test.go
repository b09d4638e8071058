package nodestatus

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
)

func TestRuntimeAndNetworkChecks(t *testing.T) {
	ctx := context.Background()
	status := func(st *kc.RuntimeStatus, err error) RuntimeStatusFunc {
		return func(context.Context) (*kc.RuntimeStatus, error) { return st, err }
	}
	ready := &kc.RuntimeStatus{Conditions: []kc.RuntimeCondition{{Type: kc.RuntimeReady, Status: true}, {Type: kc.NetworkReady, Status: true}}}
	noNet := &kc.RuntimeStatus{Conditions: []kc.RuntimeCondition{{Type: kc.RuntimeReady, Status: true},
		{Type: kc.NetworkReady, Reason: "NetworkPluginNotReady", Message: "Network plugin returns error: cni plugin not initialized"}}}
	for _, tc := range []struct {
		name             string
		st               *kc.RuntimeStatus
		err              error
		runtime, network string
	}{
		{"ready", ready, nil, "", ""},
		{"no network", noNet, nil, "", "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"},
		{"down", nil, errors.New("connection refused"), "container runtime is down: connection refused", ""},
		{"no conditions", &kc.RuntimeStatus{}, nil, "container runtime not ready: RuntimeReady condition missing", "container runtime network not ready: NetworkReady condition missing"},
	} {
		for check, want := range map[string]string{"runtime": tc.runtime, "network": tc.network} {
			var err error
			if check == "runtime" {
				err = RuntimeCheck(status(tc.st, tc.err))(ctx)
			} else {
				err = NetworkCheck(status(tc.st, tc.err))(ctx)
			}
			if want == "" {
				assert.NoError(t, err, "%s: %s", tc.name, check)
			} else {
				assert.EqualError(t, err, want, "%s: %s", tc.name, check)
			}
		}
	}
}

func TestCNIConfigCheck(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	err := CNIConfigCheck(dir)(ctx)
	assert.ErrorContains(t, err, "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady")
	assert.ErrorContains(t, err, "no network config found in "+dir+": cni plugin not initialized")

	write(t, dir, "10-broken.conflist", `{"cniVersion": "1.0.0", "name": "x", "plugins": [}`)
	assert.ErrorContains(t, CNIConfigCheck(dir)(ctx), "10-broken.conflist")

	write(t, dir, "20-loopback.conflist", `{"cniVersion": "1.0.0", "name": "lo", "plugins": [{"type": "loopback"}]}`)
	assert.NoError(t, CNIConfigCheck(dir)(ctx), "one valid configuration is enough")

	assert.ErrorContains(t, CNIConfigCheck(dir+"/missing")(ctx), "no network config found")
}
