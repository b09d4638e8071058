package nodeagent_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/nodekit-dev/nodekit/kubeapi"
	"github.com/nodekit-dev/nodekit/nodeagent"
	"github.com/nodekit-dev/nodekit/server/serverauth/serverauthtest"
)

// NewAPIClient reads the kubeconfig and talks to its server; bad input
// names the field.
func TestNewAPIClient(t *testing.T) {
	_, err := nodeagent.NewAPIClient(nodeagent.APIClientConfig{})
	assert.EqualError(t, err, "nodeagent: APIClientConfig.Rest: Required value")
	_, err = nodeagent.NewAPIClient(nodeagent.APIClientConfig{Rest: &rest.Config{}, QPS: -1})
	assert.EqualError(t, err, "nodeagent: APIClientConfig.QPS: Invalid value: -1: must not be negative")
	_, err = nodeagent.NewAPIClient(nodeagent.APIClientConfig{Rest: &rest.Config{}, Burst: -2})
	assert.EqualError(t, err, "nodeagent: APIClientConfig.Burst: Invalid value: -2: must not be negative")

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1"}}`))
	}))
	defer srv.Close()
	rc := &rest.Config{Host: srv.URL, QPS: 1}
	c, err := nodeagent.NewAPIClient(nodeagent.APIClientConfig{Rest: rc})
	require.NoError(t, err)
	defer c.Close()
	assert.Equal(t, float32(1), rc.QPS, "the caller's config is not changed")
	node, err := c.Client.Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "n1", node.Name)
}

// The event and heartbeat clients do not wait behind the main client's
// rate limit, as the kubelet's; the heartbeat client has none.
func TestAPIClientsHaveTheirOwnLimits(t *testing.T) {
	for _, bad := range []struct {
		cfg  nodeagent.APIClientConfig
		want string
	}{
		{nodeagent.APIClientConfig{Rest: &rest.Config{}, EventQPS: -1}, "APIClientConfig.EventQPS: Invalid value: -1"},
		{nodeagent.APIClientConfig{Rest: &rest.Config{}, EventBurst: -1}, "APIClientConfig.EventBurst: Invalid value: -1"},
		{nodeagent.APIClientConfig{Rest: &rest.Config{}, HeartbeatTimeout: -time.Second}, "APIClientConfig.HeartbeatTimeout: Invalid value: -1s"},
	} {
		_, err := nodeagent.NewAPIClient(bad.cfg)
		assert.ErrorContains(t, err, bad.want)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1"}}`))
	}))
	defer srv.Close()
	c, err := nodeagent.NewAPIClient(nodeagent.APIClientConfig{Rest: &rest.Config{Host: srv.URL}, QPS: 0.001, Burst: 1,
		EventQPS: 0.001, EventBurst: 1})
	require.NoError(t, err)
	defer c.Close()
	// A wait past the deadline fails at once (client-go's limiter).
	get := func(client kubeapi.Interface) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := client.Nodes().Get(ctx, "n1", metav1.GetOptions{})
		return err
	}
	require.NoError(t, get(c.Client))
	assert.ErrorContains(t, get(c.Client), "would exceed context deadline", "the burst is spent")
	require.NoError(t, get(c.Events), "its own bucket")
	assert.ErrorContains(t, get(c.Events), "would exceed context deadline")
	for range 5 {
		require.NoError(t, get(c.Heartbeat), "no limit")
	}
}

// With a Registerer the client's requests are client-go's
// rest_client_requests_total and rest_client_request_duration_seconds, and
// its certificate's expiry kubelet_certificate_manager_client_ttl_seconds
// (+Inf without one).
func TestAPIClientMetrics(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/nodes/n1" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1"}}`))
	}))
	defer srv.Close()
	reg := prometheus.NewPedanticRegistry()
	c, err := nodeagent.NewAPIClient(nodeagent.APIClientConfig{Rest: &rest.Config{Host: srv.URL}, Registerer: reg})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Client.Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	require.NoError(t, err)
	_, err = c.Client.Nodes().Get(context.Background(), "n2", metav1.GetOptions{})
	require.Error(t, err)

	host := strings.TrimPrefix(srv.URL, "http://")
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP rest_client_requests_total Number of HTTP requests, partitioned by status code, method, and host.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="`+host+`",method="GET"} 1
rest_client_requests_total{code="404",host="`+host+`",method="GET"} 1
# HELP kubelet_certificate_manager_client_ttl_seconds Gauge of the TTL (time-to-live) of the Kubelet's client certificate. The value is in seconds until certificate expiry (negative if already expired). If client certificate is invalid or unused, the value will be +INF.
# TYPE kubelet_certificate_manager_client_ttl_seconds gauge
kubelet_certificate_manager_client_ttl_seconds +Inf
`), "rest_client_requests_total", "kubelet_certificate_manager_client_ttl_seconds"))
	assert.Equal(t, 1, testutil.CollectAndCount(reg, "rest_client_request_duration_seconds"), "one verb and host")
}

func TestAPIClientCertificateTTL(t *testing.T) {
	_, cert, err := serverauthtest.ClientPKI(t.TempDir(), "system:node:n1", "system:nodes")
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(cert.PrivateKey.(*ecdsa.PrivateKey))
	require.NoError(t, err)
	rc := &rest.Config{Host: "https://127.0.0.1:1", TLSClientConfig: rest.TLSClientConfig{
		CertData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}),
		KeyData:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})}}
	reg := prometheus.NewRegistry()
	c, err := nodeagent.NewAPIClient(nodeagent.APIClientConfig{Rest: rc, Registerer: reg})
	require.NoError(t, err)
	defer c.Close()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == "kubelet_certificate_manager_client_ttl_seconds" {
			assert.InDelta(t, time.Hour.Seconds(), mf.GetMetric()[0].GetGauge().GetValue(), 60, "ClientPKI's certificate lasts an hour")
			return
		}
	}
	t.Fatal("no kubelet_certificate_manager_client_ttl_seconds")
}
