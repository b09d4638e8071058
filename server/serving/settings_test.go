package serving_test

import (
	"flag"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/server/serving"
)

func parse(t *testing.T, kc *kubeletconfig.KubeletConfiguration, apiServer bool, args ...string) (serving.Settings, error) {
	t.Helper()
	var s serving.Settings
	fs := flag.NewFlagSet("kubelet", flag.ContinueOnError)
	f := s.AddFlags(fs)
	require.NoError(t, fs.Parse(args))
	if kc != nil {
		f.ApplyConfig(kc)
	}
	return s, f.Finish("/var/lib/kubelet", apiServer)
}

// The v1beta1 defaults with an API server; the config file under the
// flags; the kubelet's standalone defaults without one.
func TestSettingsFromFlagsAndConfig(t *testing.T) {
	s, err := parse(t, nil, true)
	require.NoError(t, err)
	assert.Equal(t, "0.0.0.0", s.Address)
	assert.Equal(t, []int{10250, 0, 10248}, []int{s.Port, s.ReadOnlyPort, s.HealthzPort})
	assert.Equal(t, "/var/lib/kubelet/pki", s.TLS.CertDir)
	assert.Equal(t, ptr.To(false), s.Authentication.Anonymous.Enabled)
	assert.Equal(t, kubeletconfig.KubeletAuthorizationModeWebhook, s.Authorization.Mode)

	kc := &kubeletconfig.KubeletConfiguration{Address: "10.0.0.5", HealthzPort: ptr.To[int32](0),
		TLSCipherSuites: []string{"A", "B"}, Authorization: kubeletconfig.KubeletAuthorization{Mode: "AlwaysAllow"}}
	s, err = parse(t, kc, true, "--address", "127.0.0.1")
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", s.Address, "the flag wins")
	assert.Equal(t, 0, s.HealthzPort, "0 in the file is a value")
	assert.Equal(t, []string{"A", "B"}, s.TLS.CipherSuites)
	assert.Equal(t, kubeletconfig.KubeletAuthorizationModeAlwaysAllow, s.Authorization.Mode)

	s, err = parse(t, nil, false)
	require.NoError(t, err)
	assert.Equal(t, serving.Loopback, s.Address)
	assert.NotEmpty(t, s.Standalone)
	_, err = parse(t, nil, false, "--authorization-mode", "Webhook")
	assert.ErrorIs(t, err, serving.ErrWebhookWithoutAPIServer)
	assert.ErrorContains(t, err, "--authorization-mode asks for webhook")
	_, err = parse(t, &kubeletconfig.KubeletConfiguration{Authentication: kubeletconfig.KubeletAuthentication{
		Webhook: kubeletconfig.KubeletWebhookAuthentication{Enabled: ptr.To(true)}}}, false)
	assert.ErrorContains(t, err, "authentication.webhook.enabled in --config asks for webhook")
	s, err = parse(t, nil, false, "--port", "0")
	require.NoError(t, err)
	assert.Empty(t, s.Standalone, "no --port, nothing to make standalone")
}

func TestSettingsRejectBadValues(t *testing.T) {
	for args, want := range map[string][]string{
		`--authorization-mode: Unsupported value: "RBAC"`:                   {"--authorization-mode", "RBAC"},
		`--healthz-bind-address: Invalid value: "x": must be an IP address`: {"--healthz-bind-address", "x"},
		"--port: invalid value 70000: must be between 0 and 65535":          {"--port", "70000"},
	} {
		_, err := parse(t, nil, true, want...)
		assert.ErrorContains(t, err, args)
	}
}

func TestSettingsConfig(t *testing.T) {
	s, err := parse(t, nil, true, "--read-only-port", "10255")
	require.NoError(t, err)
	c := s.Config("n1", net.ParseIP("10.0.0.5"))
	assert.Equal(t, "n1", c.TLS.Hostname)
	assert.Equal(t, []net.IP{net.ParseIP("10.0.0.5")}, c.TLS.IPs)
	assert.Equal(t, "n1", c.Auth.NodeName)
	assert.Equal(t, s.Authorization, c.Auth.Authorization)
	assert.Equal(t, []int{10250, 10255, 10248}, []int{c.Port, c.ReadOnlyPort, c.HealthzPort})
	assert.Equal(t, "127.0.0.1", c.HealthzAddress)
}
