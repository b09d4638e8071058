package nodeagent

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nodekit-dev/nodekit/server"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The kubelet's API client rate limits (--kube-api-qps, --kube-api-burst).
const (
	DefaultAPIQPS   = 50
	DefaultAPIBurst = 100
)

// APIClientConfig is where the API server is and how hard to ask it.
type APIClientConfig struct {
	// Rest is the API server and the agent's identity, as client-go's
	// clientcmd reads them from --kubeconfig; required. Its QPS and Burst
	// are not used: the fields below are.
	Rest *rest.Config
	// QPS and Burst limit the client's requests (DefaultAPIQPS,
	// DefaultAPIBurst), as --kube-api-qps and --kube-api-burst.
	QPS   float32
	Burst int
	// Registerer, if set, gets the client's rest_client_requests_total and
	// rest_client_request_duration_seconds (client-go's, as the kubelet
	// serves them) and kubelet_certificate_manager_client_ttl_seconds.
	Registerer prometheus.Registerer
}

// APIClient is a cluster-mode agent's Config.Client over connections of
// its own (APIConnections), which Close ends.
type APIClient struct {
	Client kubernetes.Interface
	conns  *APIConnections
}

// NewAPIClient builds the API client, with its rate limits, over
// connections of its own.
func NewAPIClient(cfg APIClientConfig) (*APIClient, error) {
	switch {
	case cfg.Rest == nil:
		return nil, fmt.Errorf("nodeagent: APIClientConfig.Rest: Required value")
	case cfg.QPS < 0:
		return nil, fmt.Errorf("nodeagent: APIClientConfig.QPS: Invalid value: %v: must not be negative", cfg.QPS)
	case cfg.Burst < 0:
		return nil, fmt.Errorf("nodeagent: APIClientConfig.Burst: Invalid value: %d: must not be negative", cfg.Burst)
	}
	if cfg.QPS == 0 {
		cfg.QPS = DefaultAPIQPS
	}
	if cfg.Burst == 0 {
		cfg.Burst = DefaultAPIBurst
	}
	restCfg := rest.CopyConfig(cfg.Rest)
	restCfg.QPS, restCfg.Burst = cfg.QPS, cfg.Burst
	c := &APIClient{}
	var err error
	if c.conns, err = NewAPIConnections(restCfg); err != nil {
		return nil, err
	}
	if cfg.Registerer != nil {
		m := newAPIMetrics()
		for _, col := range append(m.collectors(), server.ClientCertificateTTL(clientCertificate(restCfg))) {
			if err := cfg.Registerer.Register(col); err != nil {
				c.conns.Close()
				return nil, fmt.Errorf("nodeagent: APIClientConfig.Registerer: %w", err)
			}
		}
		c.conns.wrap = m.wrap
	}
	if c.Client, err = c.conns.Client(restCfg); err != nil {
		c.conns.Close()
		return nil, err
	}
	return c, nil
}

// Close ends the connections, once everything using them has returned.
func (c *APIClient) Close() { c.conns.Close() }
