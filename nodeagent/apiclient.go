package nodeagent

import (
	"cmp"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nodekit-dev/nodekit/kubeapi"
	"github.com/nodekit-dev/nodekit/server"

	"k8s.io/client-go/rest"
)

// The kubelet's API client rate limits (--kube-api-qps, --kube-api-burst;
// --event-qps, --event-burst) and its heartbeat client's timeout (the
// default --node-status-update-frequency).
const (
	DefaultAPIQPS           = 50
	DefaultAPIBurst         = 100
	DefaultEventQPS         = 50
	DefaultEventBurst       = 100
	DefaultHeartbeatTimeout = 10 * time.Second
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
	// EventQPS and EventBurst limit the event client's requests
	// (DefaultEventQPS, DefaultEventBurst).
	EventQPS   float32
	EventBurst int
	// HeartbeatTimeout bounds each request of the heartbeat client, which
	// has no rate limit (DefaultHeartbeatTimeout; the kubelet's is its
	// node status update frequency, at most its lease duration).
	HeartbeatTimeout time.Duration
	// Registerer, if set, gets the client's rest_client_requests_total and
	// rest_client_request_duration_seconds (client-go's, as the kubelet
	// serves them) and kubelet_certificate_manager_client_ttl_seconds.
	Registerer prometheus.Registerer
}

// APIClient is a cluster-mode agent's Config.Client, EventClient and
// HeartbeatClient, as the kubelet's three clients, over connections of
// its own (APIConnections), which Close ends.
type APIClient struct {
	Client, Events, Heartbeat kubeapi.Interface
	conns                     *APIConnections
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
	case cfg.EventQPS < 0:
		return nil, fmt.Errorf("nodeagent: APIClientConfig.EventQPS: Invalid value: %v: must not be negative", cfg.EventQPS)
	case cfg.EventBurst < 0:
		return nil, fmt.Errorf("nodeagent: APIClientConfig.EventBurst: Invalid value: %d: must not be negative", cfg.EventBurst)
	case cfg.HeartbeatTimeout < 0:
		return nil, fmt.Errorf("nodeagent: APIClientConfig.HeartbeatTimeout: Invalid value: %v: must not be negative", cfg.HeartbeatTimeout)
	}
	cfg.QPS = cmp.Or(cfg.QPS, DefaultAPIQPS)
	cfg.Burst = cmp.Or(cfg.Burst, DefaultAPIBurst)
	cfg.EventQPS = cmp.Or(cfg.EventQPS, DefaultEventQPS)
	cfg.EventBurst = cmp.Or(cfg.EventBurst, DefaultEventBurst)
	cfg.HeartbeatTimeout = cmp.Or(cfg.HeartbeatTimeout, DefaultHeartbeatTimeout)
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
	events, heartbeat := rest.CopyConfig(restCfg), rest.CopyConfig(restCfg)
	events.QPS, events.Burst = cfg.EventQPS, cfg.EventBurst
	heartbeat.QPS, heartbeat.Timeout = -1, cfg.HeartbeatTimeout
	for _, cc := range []struct {
		to  *kubeapi.Interface
		cfg *rest.Config
	}{{&c.Client, restCfg}, {&c.Events, events}, {&c.Heartbeat, heartbeat}} {
		if *cc.to, err = c.conns.Client(cc.cfg); err != nil {
			c.conns.Close()
			return nil, err
		}
	}
	return c, nil
}

// Close ends the connections, once everything using them has returned.
func (c *APIClient) Close() { c.conns.Close() }
