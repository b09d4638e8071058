package nodeagent

import (
	"crypto/x509"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

	"github.com/nodekit-dev/nodekit/server"
)

// apiMetrics are client-go's rest_client_requests_total and
// rest_client_request_duration_seconds as the kubelet serves them
// (component-base's restclient metrics: names, help, labels, buckets), for
// this client's requests: client-go's own hook is one process-wide
// registration, which several agents in one process cannot share.
type apiMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newAPIMetrics() *apiMetrics {
	return &apiMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rest_client_requests_total",
			Help: "Number of HTTP requests, partitioned by status code, method, and host."}, []string{"code", "method", "host"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "rest_client_request_duration_seconds",
			Help:    "Request latency in seconds. Broken down by verb, and host.",
			Buckets: []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0}}, []string{"verb", "host"}),
	}
}

func (m *apiMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.requests, m.latency}
}

// wrap counts and times each request rt makes; a request that gets no
// response counts under code "<error>", as client-go's.
func (m *apiMetrics) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		start := time.Now()
		resp, err := rt.RoundTrip(req)
		code := "<error>"
		if err == nil {
			code = strconv.Itoa(resp.StatusCode)
		}
		m.requests.WithLabelValues(code, req.Method, req.URL.Host).Inc()
		m.latency.WithLabelValues(req.Method, req.URL.Host).Observe(time.Since(start).Seconds())
		return resp, err
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// clientCertificate is rc's client certificate, its file read at each
// call so that one renewed in place counts; nil without one.
func clientCertificate(rc *rest.Config) func() *x509.Certificate {
	return func() *x509.Certificate {
		data := rc.TLSClientConfig.CertData
		if rc.TLSClientConfig.CertFile != "" {
			data, _ = os.ReadFile(rc.TLSClientConfig.CertFile)
		}
		return server.ParsePEMCertificate(data)
	}
}

// NodeNameMetric is the kubelet's kubelet_node_name{node}, always 1: the
// caller registers it with its process's collectors, as a registry
// shared by several agents labels their series by node already.
func NodeNameMetric(nodeName string) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: "kubelet", Name: "node_name",
		Help: "The node's name. The count is always 1.", ConstLabels: prometheus.Labels{"node": nodeName}})
	g.Set(1)
	return g
}
