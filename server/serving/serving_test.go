package serving_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/server"
	"github.com/nodekit-dev/nodekit/server/serverauth"
	"github.com/nodekit-dev/nodekit/server/serving"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// freePort is a loopback port nothing listens on (for a moment).
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func text(s string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, s) })
}

// The kubelet's serving: the read-only API and healthz over plain HTTP, a
// zero port not served, a port in use named, and webhook auth on --port
// refused without an API server, as the kubelet's BuildAuth refuses to
// start.
func TestServesAsTheKubelet(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	webhook := serverauth.Config{NodeName: "n1",
		Authentication: kubeletconfig.KubeletAuthentication{Webhook: kubeletconfig.KubeletWebhookAuthentication{Enabled: ptr.To(true)}},
		Authorization:  kubeletconfig.KubeletAuthorization{Mode: kubeletconfig.KubeletAuthorizationModeWebhook}}
	_, err := serving.Listen(serving.Config{Address: "127.0.0.1", Port: freePort(t), Auth: webhook, API: text("api"),
		TLS: serverauth.TLSOptions{CertDir: t.TempDir(), Hostname: "n1"}})
	require.Error(t, err)
	assert.True(t, errors.Is(err, serving.ErrWebhookWithoutAPIServer), "%v", err)

	readOnly, healthz := freePort(t), freePort(t)
	cfg := serving.Config{Address: "127.0.0.1", ReadOnlyPort: readOnly, HealthzAddress: "127.0.0.1", HealthzPort: healthz,
		ReadOnly: text("read-only"), Healthz: text("ok")}
	servers, err := serving.Listen(cfg)
	require.NoError(t, err)
	require.Len(t, servers.Addrs(), 2, "Port 0 is not served")
	busy := cfg
	busy.ReadOnlyPort = freePort(t)
	_, err = serving.Listen(busy)
	require.Error(t, err, "healthz's port is in use")
	assert.Contains(t, err.Error(), strconv.Itoa(healthz))
	_, err = net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(busy.ReadOnlyPort))
	assert.Error(t, err, "nothing stays bound after a failed Listen")

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- servers.Run(runCtx) }()
	get := func(port int) string {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/")
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}
	assert.Equal(t, "ok", get(healthz))
	assert.Equal(t, "read-only", get(readOnly))
	http.DefaultClient.CloseIdleConnections()

	stop()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("Run did not return after its context ended")
	}
	_, err = net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(readOnly))
	assert.Error(t, err, "the listener is closed")
}

// The kubelet serves its API port with ListenAndServeTLS, which offers
// HTTP/2: the API server reads logs over it (an HTTP/1.1 chunked body can
// hand it the last data together with EOF, which its WebSocket copy drops),
// while upgrades (exec, attach, port-forward) still get HTTP/1.1.
func TestAPIPortSpeaksHTTP2AndHTTP11(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	anonymous := serverauth.Config{NodeName: "n1",
		Authentication: kubeletconfig.KubeletAuthentication{Anonymous: kubeletconfig.KubeletAnonymousAuthentication{Enabled: ptr.To(true)},
			Webhook: kubeletconfig.KubeletWebhookAuthentication{Enabled: ptr.To(false)}},
		Authorization: kubeletconfig.KubeletAuthorization{Mode: kubeletconfig.KubeletAuthorizationModeAlwaysAllow}}
	proto := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, r.Proto) })
	port := freePort(t)
	servers, err := serving.Listen(serving.Config{Address: "127.0.0.1", Port: port, Auth: anonymous, API: proto,
		TLS: serverauth.TLSOptions{CertDir: t.TempDir(), Hostname: "n1"}})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- servers.Run(runCtx) }()

	for _, tc := range []struct {
		name      string
		nextProto []string
		want      string
	}{
		{name: "a client offering h2", nextProto: []string{"h2", "http/1.1"}, want: "HTTP/2.0"},
		{name: "an upgrading client", nextProto: []string{"http/1.1"}, want: "HTTP/1.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &http.Transport{ForceAttemptHTTP2: tc.want == "HTTP/2.0", // else it adds h2 to NextProtos
				TLSClientConfig: &tls.Config{InsecureSkipVerify: true, NextProtos: tc.nextProto}} //nolint:gosec // a self-signed test server
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr}).Get("https://127.0.0.1:" + strconv.Itoa(port) + "/")
			require.NoError(t, err)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(b))
		})
	}
	stop()
	require.NoError(t, <-done)
}

// TestServingCertificateTTLMetric: with a Registerer, the API port's
// certificate's time to expiry is kubelet_certificate_manager_server_ttl_seconds.
func TestServingCertificateTTLMetric(t *testing.T) {
	anonymous := serverauth.Config{NodeName: "n1",
		Authentication: kubeletconfig.KubeletAuthentication{Anonymous: kubeletconfig.KubeletAnonymousAuthentication{Enabled: ptr.To(true)},
			Webhook: kubeletconfig.KubeletWebhookAuthentication{Enabled: ptr.To(false)}},
		Authorization: kubeletconfig.KubeletAuthorization{Mode: kubeletconfig.KubeletAuthorizationModeAlwaysAllow}}
	certDir, reg := t.TempDir(), prometheus.NewRegistry()
	servers, err := serving.Listen(serving.Config{Address: "127.0.0.1", Port: freePort(t), Auth: anonymous, API: text("api"),
		TLS: serverauth.TLSOptions{CertDir: certDir, Hostname: "n1"}, Registerer: reg})
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- servers.Run(ctx) }()
	defer func() { stop(); require.NoError(t, <-done) }()

	pemData, err := os.ReadFile(filepath.Join(certDir, "kubelet.crt"))
	require.NoError(t, err)
	cert := server.ParsePEMCertificate(pemData)
	require.NotNil(t, cert)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	require.Len(t, mfs, 1)
	assert.Equal(t, "kubelet_certificate_manager_server_ttl_seconds", mfs[0].GetName())
	assert.InDelta(t, time.Until(cert.NotAfter).Seconds(), mfs[0].GetMetric()[0].GetGauge().GetValue(), 5)
}
