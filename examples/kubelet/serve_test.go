package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/streamtest"
	"github.com/nodekit-dev/nodekit/runtime/fake"
	"github.com/nodekit-dev/nodekit/server/serverauth/serverauthtest"
)

// servedAgent runs the agent on the fake runtime with args and its
// servers, which must be on loopback; the pod "web" (testbin serve) runs
// in it.
func servedAgent(t *testing.T, ctx context.Context, args ...string) (*agent, error) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "web.yaml"), []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n"+
		"spec:\n  containers:\n  - {name: c, image: nodekit.local/testbin:1}\n"), 0o644))
	// The test serves the fake itself: the default build has none in-process.
	endpoint, stopFake, err := fake.StartTemp(fake.WithImages(fakeImages...))
	require.NoError(t, err)
	t.Cleanup(stopFake)
	cfg, err := parseFlags(append([]string{"--runtime", "remote", "--container-runtime-endpoint", endpoint,
		"--pod-manifest-path", dir, "--hostname-override", "n1",
		"--pod-logs-dir", t.TempDir(), "--file-check-frequency", "100ms", "--root-dir", t.TempDir()}, args...))
	require.NoError(t, err)
	require.True(t, net.ParseIP(cfg.serving.Address).IsLoopback(), "tests listen on loopback only, not %s", cfg.serving.Address)
	a, stop := startAgent(t, ctx, cfg)
	t.Cleanup(stop)
	servers, err := a.listen()
	if err != nil {
		return a, err
	}
	sctx, cancel := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- servers.Run(sctx) }()
	t.Cleanup(func() { cancel(); assert.NoError(t, <-served) })
	return a, nil
}

// Without --kubeconfig there is no API server to ask: webhook settings
// left to their defaults give way to the kubelet's standalone defaults
// (anonymous, AlwaysAllow), on loopback unless --address is given; webhook
// settings given, on the command line or in --config, are refused by name.
func TestStandaloneServingDefaults(t *testing.T) {
	manifests := t.TempDir()
	configFile := func(body string) string {
		path := filepath.Join(t.TempDir(), "kubelet.yaml")
		require.NoError(t, os.WriteFile(path, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"+body), 0o644))
		return path
	}
	type want struct {
		address, mode      string
		anonymous, webhook bool
	}
	standalone := want{"127.0.0.1", "AlwaysAllow", true, false}
	for _, tc := range []struct {
		name string
		args []string
		want want
		err  string // the setting named when refused
	}{
		{name: "flags only", args: nil, want: standalone},
		{name: "config file silent on auth", args: []string{"--config", configFile("maxPods: 20\n")}, want: standalone},
		{name: "standalone.yaml's explicit settings", args: []string{"--config", "standalone.yaml"}, want: standalone},
		{name: "--address given is kept", args: []string{"--address", "0.0.0.0"}, want: want{"0.0.0.0", "AlwaysAllow", true, false}},
		{name: "--anonymous-auth=false given is kept", args: []string{"--anonymous-auth=false", "--client-ca-file", "/ca.crt"},
			want: want{"127.0.0.1", "AlwaysAllow", false, false}},
		{name: "auth given without webhook is kept", args: []string{"--authentication-token-webhook=false", "--authorization-mode=AlwaysAllow"},
			want: want{"0.0.0.0", "AlwaysAllow", false, false}},
		{name: "--port 0 serves nothing to decide", args: []string{"--port", "0"}, want: want{"0.0.0.0", "Webhook", false, true}},
		{name: "--kubeconfig keeps v1beta1's defaults", args: []string{"--kubeconfig", "/etc/kubernetes/kubelet.conf"},
			want: want{"0.0.0.0", "Webhook", false, true}},
		{name: "--authentication-token-webhook given", args: []string{"--authentication-token-webhook"}, err: "--authentication-token-webhook"},
		{name: "--authorization-mode=Webhook given", args: []string{"--authorization-mode=Webhook"}, err: "--authorization-mode"},
		{name: "config file asks for webhook authentication", args: []string{"--config", configFile("authentication: {webhook: {enabled: true}}\n")},
			err: "authentication.webhook.enabled"},
		{name: "config file asks for webhook authorization", args: []string{"--config", configFile("authorization: {mode: Webhook}\n")},
			err: "authorization.mode"},
		{name: "the flag wins over the file", args: []string{"--config", configFile("authorization: {mode: Webhook}\n"), "--authorization-mode=AlwaysAllow"},
			want: want{"127.0.0.1", "AlwaysAllow", true, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseFlags(append([]string{"--pod-manifest-path", manifests}, tc.args...))
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.Contains(t, err.Error(), "--kubeconfig")
				return
			}
			require.NoError(t, err)
			s := cfg.serving
			assert.Equal(t, tc.want, want{s.Address, string(s.Authorization.Mode), *s.Authentication.Anonymous.Enabled, *s.Authentication.Webhook.Enabled})
		})
	}
}

// The flags-only standalone agent starts and serves its API to anonymous
// requests, on loopback only.
func TestStandaloneServesOnLoopback(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	port := freePorts(t, 1)[0]
	a, err := servedAgent(t, ctx, "--port", strconv.Itoa(port), "--healthz-port", "0")
	require.NoError(t, err)
	assert.NotEmpty(t, a.cfg.serving.Standalone, "what was chosen, for the start's log line")
	poll.Eventually(t, func() bool { p := podNamed(a, "web-n1"); return p != nil && p.Status.Phase == v1.PodRunning }, 20*time.Second, 20*time.Millisecond, "web running")
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // the agent's self-signed certificate
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get("https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) + "/pods")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "anonymous, AlwaysAllow: %s", body)
	assert.Contains(t, string(body), `"name":"web-n1"`)
}

// The kubelet's three servers: --port over TLS behind authentication
// (here client certificates) and authorization, the read-only port's
// subset over plain HTTP, healthz.
func TestServingPortsAsTheKubelet(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	caFile, cert, err := serverauthtest.ClientPKI(t.TempDir(), "kube-apiserver-kubelet-client", "system:masters")
	require.NoError(t, err)
	ports := freePorts(t, 3)
	a, err := servedAgent(t, ctx, "--address", "127.0.0.1", "--port", strconv.Itoa(ports[0]), "--read-only-port", strconv.Itoa(ports[1]),
		"--healthz-port", strconv.Itoa(ports[2]), "--authentication-token-webhook=false", "--authorization-mode", "AlwaysAllow",
		"--client-ca-file", caFile)
	require.NoError(t, err)
	poll.Eventually(t, func() bool { p := podNamed(a, "web-n1"); return p != nil && p.Status.Phase == v1.PodRunning }, 20*time.Second, 20*time.Millisecond, "web running")

	secure := func(cert *tls.Certificate) *http.Client {
		cfg := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the agent's self-signed certificate
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		tr := &http.Transport{TLSClientConfig: cfg}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr}
	}
	get := func(c *http.Client, url string) (int, string) {
		resp, err := c.Get(url)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	api := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	readOnly := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))
	for _, tc := range []struct {
		name   string
		client *http.Client
		url    string
		code   int
		body   string
	}{
		{"client certificate", secure(&cert), api + "/pods", 200, `"name":"web-n1"`},
		{"logs with a certificate", secure(&cert), api + "/containerLogs/default/web-n1/c", 200, "listening on"},
		{"probe metrics", secure(&cert), api + "/metrics/probes", 200, ""},
		{"resource metrics", secure(&cert), api + "/metrics/resource", 200, "resource_scrape_error 0"},
		{"no certificate: anonymous is off", secure(nil), api + "/pods", 401, "Unauthorized"},
		{"read-only pods", http.DefaultClient, readOnly + "/pods", 200, `"name":"web-n1"`},
		{"read-only has no logs", http.DefaultClient, readOnly + "/containerLogs/default/web-n1/c", 404, ""},
		{"read-only has no exec", http.DefaultClient, readOnly + "/exec/default/web-n1/c?command=x&output=1", 404, ""},
		{"healthz", http.DefaultClient, "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[2])) + "/healthz", 200, "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(tc.client, tc.url)
			assert.Equal(t, tc.code, code, body)
			assert.Contains(t, body, tc.body)
		})
	}
	// A session through the whole stack: TLS, the client certificate, the
	// handler, the runtime manager, the fake runtime's streaming server.
	session, err := streamtest.Stream(ctx, &rest.Config{Host: api, TLSClientConfig: rest.TLSClientConfig{Insecure: true,
		CertData: pemCert(t, cert), KeyData: pemKey(t, cert)}}, api+"/exec/default/web-n1/c?command=/testbin&command=cat&input=1&output=1&error=1",
		false, strings.NewReader("over TLS\n"), false)
	require.NoError(t, err)
	require.NoError(t, session.Err)
	assert.Equal(t, "over TLS\n", session.Stdout)

	var list v1.PodList
	_, body := get(http.DefaultClient, readOnly+"/pods")
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	assert.Len(t, list.Items, 1)
	_, err = os.Stat(filepath.Join(a.cfg.rootDir, "pki", "kubelet.crt"))
	assert.NoError(t, err, "the self-signed serving certificate is kept in <root-dir>/pki")
}

// freePorts returns n loopback ports free a moment ago.
func freePorts(t *testing.T, n int) []int {
	var ls []net.Listener
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

func pemCert(t *testing.T, c tls.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]})
}

func pemKey(t *testing.T, c tls.Certificate) []byte {
	der, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}
