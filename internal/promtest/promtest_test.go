//go:build integration

package promtest_test

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/promtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const token = "the-token"

// exporter serves a small exposition over TLS on 127.0.0.1 to requests
// with the bearer token, and 401 to others.
func exporter(t *testing.T) (srv *httptest.Server, caPEM []byte, scrapes *atomic.Int64) {
	scrapes = new(atomic.Int64)
	srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		n := scrapes.Add(1)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		fmt.Fprintf(w, `# HELP nodekit_promtest_answer An answer per container.
# TYPE nodekit_promtest_answer gauge
nodekit_promtest_answer{namespace="ns",pod="web",container="c"} 42
nodekit_promtest_answer{namespace="ns",pod="db",container="c",instance="node-a"} 7
# HELP nodekit_promtest_scrapes_total Scrapes served.
# TYPE nodekit_promtest_scrapes_total counter
nodekit_promtest_scrapes_total %d
`, n)
	}))
	t.Cleanup(srv.Close)
	return srv, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), scrapes
}

// A real Prometheus scrapes the exporter over TLS (its CA verified) with
// the bearer token, as kube-prometheus scrapes a kubelet's /metrics/cadvisor:
// job="kubelet", metrics_path, the exposition's labels honored; a recording
// rule runs on what it scraped.
func TestScrapeOverTLSWithBearerToken(t *testing.T) {
	srv, caPEM, scrapes := exporter(t)
	p := promtest.Start(t, promtest.Config{
		Targets: []promtest.Target{{URL: srv.URL + "/metrics/cadvisor", BearerToken: token, CAPEM: caPEM}},
		Rules: []promtest.Rule{{Record: "namespace_pod:nodekit_promtest_answer:sum",
			Expr: `sum by (namespace, pod) (nodekit_promtest_answer{job="kubelet", metrics_path="/metrics/cadvisor"})`}},
	})
	p.WaitForTargetsUp(t, 30*time.Second)
	assert.Positive(t, scrapes.Load())
	ctx := context.Background()

	v, err := p.Query(ctx, `nodekit_promtest_answer{job="kubelet", metrics_path="/metrics/cadvisor"}`)
	require.NoError(t, err)
	require.Len(t, v, 2, "%s", v)
	byPod := map[string]promtest.Sample{}
	for _, s := range v {
		byPod[s.Metric["pod"]] = s
	}
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	assert.Equal(t, 42.0, byPod["web"].Value)
	assert.Equal(t, u.Host, byPod["web"].Metric["instance"], "the target's instance")
	assert.Equal(t, 7.0, byPod["db"].Value)
	assert.Equal(t, "node-a", byPod["db"].Metric["instance"], "honor_labels: the exposition's instance")
	assert.WithinDuration(t, time.Now(), byPod["web"].Time, time.Minute)

	poll.Eventually(t, func() bool {
		v, err = p.Query(ctx, `rate(nodekit_promtest_scrapes_total{job="kubelet"}[10s])`)
		require.NoError(t, err)
		return len(v) == 1 && v[0].Value > 0
	}, 30*time.Second, 200*time.Millisecond, "a rate from two scrapes: %v", func() string { return v.String() })

	poll.Eventually(t, func() bool {
		v, err = p.Query(ctx, `namespace_pod:nodekit_promtest_answer:sum`)
		require.NoError(t, err)
		return len(v) == 2
	}, 30*time.Second, 200*time.Millisecond, "the recording rule's two series: %v", func() string { return v.String() })
	assert.Equal(t, `namespace_pod:nodekit_promtest_answer:sum{namespace="ns", pod="db"} 7
namespace_pod:nodekit_promtest_answer:sum{namespace="ns", pod="web"} 42`, v.String())

	v, err = p.Query(ctx, `scalar(sum(nodekit_promtest_answer))`)
	require.NoError(t, err)
	require.Len(t, v, 1)
	assert.Equal(t, 49.0, v[0].Value)
	assert.Empty(t, v[0].Metric)

	r, err := p.QueryResult(ctx, `rate(nodekit_promtest_answer[10s])`)
	require.NoError(t, err)
	assert.Contains(t, strings.Join(r.Infos, "\n"), "might not be a counter", "Prometheus's info on rate() of a gauge")

	_, err = p.Query(ctx, `rate(nodekit_promtest_answer[`)
	assert.ErrorContains(t, err, "bad_data")
	_, err = p.Query(ctx, `nodekit_promtest_answer[10s]`)
	assert.ErrorContains(t, err, `"matrix", not an instant vector`)
}

// A wrong token: the target is down with the server's 401 (here without
// verifying the server's certificate).
func TestWrongTokenIsDown(t *testing.T) {
	srv, _, _ := exporter(t)
	p := promtest.Start(t, promtest.Config{
		Targets: []promtest.Target{{URL: srv.URL + "/metrics", BearerToken: "wrong", InsecureSkipVerify: true}},
	})
	var targets []promtest.TargetHealth
	poll.Eventually(t, func() bool {
		var err error
		targets, err = p.Targets(context.Background())
		require.NoError(t, err)
		return len(targets) == 1 && targets[0].Health == "down"
	}, 30*time.Second, 100*time.Millisecond, "the target down: %v", func() string { return fmt.Sprint(targets) })
	assert.Contains(t, targets[0].LastError, "401")
	assert.Equal(t, srv.URL+"/metrics", targets[0].ScrapeURL)
	assert.Equal(t, "/metrics", targets[0].Labels["metrics_path"])
}

func TestCheckMetrics(t *testing.T) {
	promtool := promtest.Promtool(t)
	assert.Empty(t, promtest.CheckMetrics(t, promtool, []byte(`# HELP nodekit_promtest_scrapes_total Scrapes served.
# TYPE nodekit_promtest_scrapes_total counter
nodekit_promtest_scrapes_total 1
`)), "a good exposition")
	assert.Contains(t, promtest.CheckMetrics(t, promtool, []byte(`# HELP nodekit_promtest_scrapes Scrapes served.
# TYPE nodekit_promtest_scrapes counter
nodekit_promtest_scrapes 1
`)), `nodekit_promtest_scrapes counter metrics should have "_total" suffix`)
	assert.Contains(t, promtest.CheckMetrics(t, promtool, []byte("nodekit_promtest_scrapes{ 1\n")), "error while linting")
}
