package serverauth_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/server/serverauth"
	"github.com/nodekit-dev/nodekit/server/serverauth/serverauthtest"
)

func TestAttributes(t *testing.T) {
	u := serverauth.User{Name: "alice"}
	for _, tc := range []struct {
		method, path string
		verb         string
		subresources []string
	}{
		{"GET", "/stats/summary", "get", []string{"stats"}},
		{"GET", "/stats", "get", []string{"stats"}},
		{"GET", "/metrics", "get", []string{"metrics"}},
		{"GET", "/metrics/resource", "get", []string{"metrics"}},
		{"GET", "/logs/syslog", "get", []string{"log"}},
		{"GET", "/pods", "get", []string{"pods", "proxy"}},
		{"GET", "/runningpods/", "get", []string{"pods", "proxy"}},
		{"GET", "/healthz", "get", []string{"healthz", "proxy"}},
		{"GET", "/configz", "get", []string{"configz", "proxy"}},
		{"GET", "/containerLogs/ns/pod/c", "get", []string{"proxy"}},
		{"POST", "/exec/ns/pod/c", "create", []string{"proxy"}},
		{"GET", "/statsfoo", "get", []string{"proxy"}},
		{"PUT", "/x", "update", []string{"proxy"}},
		{"PATCH", "/x", "patch", []string{"proxy"}},
		{"DELETE", "/x", "delete", []string{"proxy"}},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			attrs := serverauth.RequestAttributes("node-1", u, httptest.NewRequest(tc.method, tc.path, nil))
			var subs []string
			for _, a := range attrs {
				subs = append(subs, a.Subresource)
				assert.Equal(t, tc.verb, a.Verb)
				assert.Equal(t, "nodes", a.Resource)
				assert.Equal(t, "node-1", a.Name)
				assert.Equal(t, "v1", a.APIVersion)
				assert.Equal(t, tc.path, a.Path)
				assert.Equal(t, "alice", a.User.Name)
			}
			assert.Equal(t, tc.subresources, subs)
		})
	}
}

// apiserver answers TokenReviews (tokens: user) and SubjectAccessReviews
// (allowed: "user verb subresource") over HTTP on loopback, as the API
// server does for the webhooks, and counts them.
type apiserver struct {
	*kubernetes.Clientset
	mu              sync.Mutex
	tokens          map[string]string
	allowed         map[string]bool
	reviews, checks int
	fail            int      // the next requests answered 500
	groups          []string // of the last SubjectAccessReview
}

func newAPIServer(t *testing.T) *apiserver {
	a := &apiserver{tokens: map[string]string{}, allowed: map[string]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.fail > 0 {
			a.fail--
			http.Error(w, "etcd is sad", http.StatusInternalServerError)
			return
		}
		var out any
		switch r.URL.Path {
		case "/apis/authentication.k8s.io/v1/tokenreviews":
			var tr authnv1.TokenReview
			require.NoError(t, json.NewDecoder(r.Body).Decode(&tr))
			a.reviews++
			if name, ok := a.tokens[tr.Spec.Token]; ok {
				tr.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{Username: name, Groups: []string{"devs"}}}
			}
			out = &tr
		case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
			var sar authzv1.SubjectAccessReview
			require.NoError(t, json.NewDecoder(r.Body).Decode(&sar))
			a.checks++
			a.groups = sar.Spec.Groups
			ra := sar.Spec.ResourceAttributes
			sar.Status.Allowed = ra != nil && ra.Resource == "nodes" && ra.Name == "node-1" && a.allowed[sar.Spec.User+" "+ra.Verb+" "+ra.Subresource]
			out = &sar
		default:
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		require.NoError(t, json.NewEncoder(w).Encode(out))
	}))
	t.Cleanup(srv.Close)
	var err error
	a.Clientset, err = kubernetes.NewForConfig(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
	require.NoError(t, err)
	return a
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })

func TestFilterWebhooks(t *testing.T) {
	api := newAPIServer(t)
	api.tokens["alice-token"] = "alice"
	api.tokens["bob-token"] = "bob"
	api.allowed["alice get stats"] = true
	api.allowed["alice get proxy"] = true
	api.allowed["bob get pods"] = true
	api.allowed["system:anonymous get healthz"] = true
	for _, tc := range []struct {
		name      string
		anonymous bool
		method    string
		path      string
		token     string
		code      int
		body      string
	}{
		{"no credentials, anonymous off", false, "GET", "/pods", "", 401, "Unauthorized"},
		{"unknown token", false, "GET", "/pods", "nobody-knows", 401, "Unauthorized"},
		{"stats through nodes/stats", false, "GET", "/stats/summary", "alice-token", 200, "ok"},
		{"pods through the nodes/proxy fallback", false, "GET", "/pods", "alice-token", 200, "ok"},
		{"exec needs nodes/proxy create", false, "POST", "/exec/ns/p/c", "alice-token", 403,
			"Forbidden (user=alice, verb=create, resource=nodes, subresource(s)=[proxy])"},
		{"pods through nodes/pods", false, "GET", "/pods", "bob-token", 200, "ok"},
		{"bob has no nodes/proxy", false, "GET", "/containerLogs/ns/p/c", "bob-token", 403,
			"Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[proxy])"},
		{"bob has no nodes/stats, and stats has no fallback", false, "GET", "/stats/summary", "bob-token", 403,
			"Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[stats])"},
		{"anonymous on: system:anonymous is authorized", true, "GET", "/healthz", "", 200, "ok"},
		{"anonymous on: but not for everything", true, "GET", "/pods", "", 403,
			"Forbidden (user=system:anonymous, verb=get, resource=nodes, subresource(s)=[pods proxy])"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			auth, err := serverauth.New(serverauth.Config{NodeName: "node-1",
				Authentication: kubeletconfig.KubeletAuthentication{Anonymous: kubeletconfig.KubeletAnonymousAuthentication{Enabled: ptr.To(tc.anonymous)}},
				TokenReviews:   api.AuthenticationV1().TokenReviews(), SubjectAccessReviews: api.AuthorizationV1().SubjectAccessReviews()})
			require.NoError(t, err)
			r := httptest.NewRequest(tc.method, tc.path, nil)
			if tc.token != "" {
				r.Header.Set("Authorization", "Bearer "+tc.token)
			}
			w := httptest.NewRecorder()
			auth.Filter(ok).ServeHTTP(w, r)
			assert.Equal(t, tc.code, w.Code)
			assert.Equal(t, tc.body, strings.TrimSpace(w.Body.String()))
		})
	}
}

func TestFilterCachesAnswers(t *testing.T) {
	api := newAPIServer(t)
	api.tokens["alice-token"] = "alice"
	api.allowed["alice get stats"] = true
	auth, err := serverauth.New(serverauth.Config{NodeName: "node-1", TokenReviews: api.AuthenticationV1().TokenReviews(), SubjectAccessReviews: api.AuthorizationV1().SubjectAccessReviews()})
	require.NoError(t, err)
	for range 5 {
		r := httptest.NewRequest("GET", "/stats/summary", nil)
		r.Header.Set("Authorization", "Bearer alice-token")
		w := httptest.NewRecorder()
		auth.Filter(ok).ServeHTTP(w, r)
		require.Equal(t, 200, w.Code)
	}
	assert.Equal(t, 1, api.reviews, "token reviews cached (2m)")
	assert.Equal(t, 1, api.checks, "access reviews cached (5m)")
}

func TestNewRefusesWhatCannotWork(t *testing.T) {
	api := newAPIServer(t)
	for _, tc := range []struct {
		cfg serverauth.Config
		err string
	}{
		{serverauth.Config{}, "serverauth: NodeName is required"},
		{serverauth.Config{NodeName: "n", SubjectAccessReviews: api.AuthorizationV1().SubjectAccessReviews()},
			"serverauth: authentication.webhook.enabled needs an API server (no TokenReviews client)"},
		{serverauth.Config{NodeName: "n", TokenReviews: api.AuthenticationV1().TokenReviews()},
			"serverauth: authorization.mode Webhook needs an API server (no SubjectAccessReviews client)"},
		{serverauth.Config{NodeName: "n", Authentication: kubeletconfig.KubeletAuthentication{Webhook: kubeletconfig.KubeletWebhookAuthentication{Enabled: ptr.To(false)}},
			Authorization: kubeletconfig.KubeletAuthorization{Mode: kubeletconfig.KubeletAuthorizationModeAlwaysAllow}},
			"serverauth: authentication: no authentication method configured"},
		{serverauth.Config{NodeName: "n", Authentication: kubeletconfig.KubeletAuthentication{Anonymous: kubeletconfig.KubeletAnonymousAuthentication{Enabled: ptr.To(true)},
			Webhook: kubeletconfig.KubeletWebhookAuthentication{Enabled: ptr.To(false)}},
			Authorization: kubeletconfig.KubeletAuthorization{Mode: "RBAC"}},
			`serverauth: authorization.mode: Unsupported value: "RBAC": supported values: "AlwaysAllow", "Webhook"`},
		{serverauth.Config{NodeName: "n", Authentication: kubeletconfig.KubeletAuthentication{X509: kubeletconfig.KubeletX509Authentication{ClientCAFile: "/nonexistent/ca.crt"}},
			TokenReviews: api.AuthenticationV1().TokenReviews(), SubjectAccessReviews: api.AuthorizationV1().SubjectAccessReviews()},
			"serverauth: authentication.x509.clientCAFile:"},
	} {
		_, err := serverauth.New(tc.cfg)
		assert.ErrorContains(t, err, tc.err)
	}
}

// pki makes a CA and a client certificate it signed, as PEM files.
func pki(t *testing.T, dir, cn string, orgs ...string) (caFile string, client tls.Certificate) {
	caFile, client, err := serverauthtest.ClientPKI(dir, cn, orgs...)
	require.NoError(t, err)
	return caFile, client
}

// Over real TLS on loopback: a client certificate the client CA signed is
// its subject (the apiserver's kubelet client in system:masters), one it
// did not sign is refused, and the self-signed serving pair is kept.
func TestClientCertificatesOverTLS(t *testing.T) {
	dir := t.TempDir()
	caFile, apiserverCert := pki(t, dir, "kube-apiserver-kubelet-client", "system:masters")
	_, stranger := pki(t, t.TempDir(), "mallory", "system:masters")
	api := newAPIServer(t)
	api.allowed["kube-apiserver-kubelet-client create proxy"] = true
	auth, err := serverauth.New(serverauth.Config{NodeName: "node-1",
		Authentication: kubeletconfig.KubeletAuthentication{X509: kubeletconfig.KubeletX509Authentication{ClientCAFile: caFile}},
		TokenReviews:   api.AuthenticationV1().TokenReviews(), SubjectAccessReviews: api.AuthorizationV1().SubjectAccessReviews()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = auth.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	tlsCfg, err := serverauth.TLSConfig(serverauth.TLSOptions{CertDir: filepath.Join(dir, "pki"), Hostname: "node-1",
		IPs: []net.IP{net.ParseIP("127.0.0.1")}, MinVersion: "VersionTLS12"})
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(auth.Filter(ok))
	srv.TLS = tlsCfg
	srv.StartTLS()
	defer srv.Close()

	get := func(cert *tls.Certificate) int {
		tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // a self-signed test server
		if cert != nil {
			tr.TLSClientConfig.Certificates = []tls.Certificate{*cert}
		}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Post(srv.URL+"/exec/ns/p/c", "text/plain", nil)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, 200, get(&apiserverCert))
	assert.Equal(t, 401, get(&stranger), "signed by another CA")
	assert.Equal(t, 401, get(nil), "no certificate, no token, anonymous off")

	first, err := os.ReadFile(filepath.Join(dir, "pki", "kubelet.crt"))
	require.NoError(t, err)
	_, err = serverauth.TLSConfig(serverauth.TLSOptions{CertDir: filepath.Join(dir, "pki"), Hostname: "node-1"})
	require.NoError(t, err)
	again, err := os.ReadFile(filepath.Join(dir, "pki", "kubelet.crt"))
	require.NoError(t, err)
	assert.Equal(t, first, again, "the self-signed pair is made once and kept")
}

func TestTLSConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		opts serverauth.TLSOptions
		err  string
	}{
		{serverauth.TLSOptions{CertFile: "/a.crt"}, `--tls-cert-file and --tls-private-key-file go together (got "/a.crt" and "")`},
		{serverauth.TLSOptions{CertDir: "pki"}, `--cert-dir: Invalid value: "pki": must be an absolute path`},
		{serverauth.TLSOptions{CertDir: t.TempDir(), MinVersion: "TLS9"}, `--tls-min-version: Invalid value: "TLS9"`},
		{serverauth.TLSOptions{CertDir: t.TempDir(), CipherSuites: []string{"TLS_NOPE"}}, "--tls-cipher-suites:"},
		{serverauth.TLSOptions{CertFile: "/nonexistent.crt", KeyFile: "/nonexistent.key"}, "serving certificate /nonexistent.crt"},
	} {
		_, err := serverauth.TLSConfig(tc.opts)
		assert.ErrorContains(t, err, tc.err)
	}
}

// What the API server's delegating authenticator does beyond the basics:
// failed credentials are refused even with anonymous on, tokens come in
// WebSocket subprotocols too and are removed once used, the authenticated
// get system:authenticated, and answers expire on the injected clock.
func TestFilterAuthenticatesAsTheAPIServer(t *testing.T) {
	api := newAPIServer(t)
	api.tokens["alice-token"] = "alice"
	api.allowed["alice get stats"] = true
	api.allowed["system:anonymous get stats"] = true
	clk := clocktesting.NewFakeClock(time.Now())
	auth, err := serverauth.New(serverauth.Config{NodeName: "node-1", Clock: clk,
		Authentication: kubeletconfig.KubeletAuthentication{Anonymous: kubeletconfig.KubeletAnonymousAuthentication{Enabled: ptr.To(true)}},
		TokenReviews:   api.AuthenticationV1().TokenReviews(), SubjectAccessReviews: api.AuthorizationV1().SubjectAccessReviews()})
	require.NoError(t, err)
	var seen http.Header
	record := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = r.Header.Clone(); ok(w, r) })
	serve := func(set func(http.Header)) int {
		r := httptest.NewRequest("GET", "/stats/summary", nil)
		set(r.Header)
		w := httptest.NewRecorder()
		auth.Filter(record).ServeHTTP(w, r)
		return w.Code
	}
	assert.Equal(t, 401, serve(func(h http.Header) { h.Set("Authorization", "Bearer wrong") }), "a bad token is no anonymous request")
	assert.Equal(t, 200, serve(func(http.Header) {}), "no credentials: anonymous")

	assert.Equal(t, 200, serve(func(h http.Header) { h.Set("Authorization", "Bearer alice-token") }))
	assert.Empty(t, seen.Get("Authorization"), "the token is not passed on")
	assert.Equal(t, []string{"devs", serverauth.GroupAuthenticated}, api.groups)

	ws := "base64url.bearer.authorization.k8s.io." + base64.RawURLEncoding.EncodeToString([]byte("alice-token"))
	assert.Equal(t, 200, serve(func(h http.Header) {
		h.Set("Upgrade", "websocket")
		h.Set("Sec-WebSocket-Protocol", "v5.channel.k8s.io, "+ws)
	}))
	assert.Equal(t, "v5.channel.k8s.io", seen.Get("Sec-WebSocket-Protocol"), "the token's subprotocol is removed")
	assert.Equal(t, 2, api.reviews, "the wrong token, then alice's once")

	clk.Step(2*time.Minute + time.Second)
	api.fail = 2 // answered after the webhook back-off's retries
	assert.Equal(t, 200, serve(func(h http.Header) { h.Set("Authorization", "Bearer alice-token") }))
	assert.Equal(t, 3, api.reviews, "reviewed again once the answer expired")
}

// The client CA bundle is read again when it changes.
func TestClientCAIsReloaded(t *testing.T) {
	dir := t.TempDir()
	caFile, alice := pki(t, dir, "alice")
	otherCA, bob := pki(t, t.TempDir(), "bob")
	api := newAPIServer(t)
	clk := clocktesting.NewFakeClock(time.Now())
	auth, err := serverauth.New(serverauth.Config{NodeName: "node-1", Clock: clk,
		Authentication: kubeletconfig.KubeletAuthentication{X509: kubeletconfig.KubeletX509Authentication{ClientCAFile: caFile},
			Webhook: kubeletconfig.KubeletWebhookAuthentication{Enabled: ptr.To(false)}},
		Authorization: kubeletconfig.KubeletAuthorization{Mode: kubeletconfig.KubeletAuthorizationModeAlwaysAllow},
		TokenReviews:  api.AuthenticationV1().TokenReviews(), SubjectAccessReviews: api.AuthorizationV1().SubjectAccessReviews()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = auth.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	serve := func(cert tls.Certificate) int {
		leaf, err := x509.ParseCertificate(cert.Certificate[0])
		require.NoError(t, err)
		r := httptest.NewRequest("GET", "/pods", nil)
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}}
		w := httptest.NewRecorder()
		auth.Filter(ok).ServeHTTP(w, r)
		return w.Code
	}
	assert.Equal(t, 200, serve(alice))
	assert.Equal(t, 401, serve(bob))
	pem, err := os.ReadFile(otherCA)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(caFile, pem, 0o600))
	poll.Eventually(t, func() bool { clk.Step(10 * time.Second); return serve(bob) == 200 }, 10*time.Second, 10*time.Millisecond,
		"the new bundle in use")
	assert.Equal(t, 401, serve(alice), "the old CA is gone")
}
