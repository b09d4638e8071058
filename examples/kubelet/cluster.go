package main

import (
	"fmt"
	"net/http"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// cluster is --kubeconfig's API client, over a transport of its own.
type cluster struct {
	client kubernetes.Interface
	conns  *http.Transport // closed when the agent stops: nothing left behind
}

// newCluster builds the API client from --kubeconfig, --kube-api-qps and
// --kube-api-burst; nodeagent does the rest of cluster mode.
func newCluster(cfg config) (*cluster, error) {
	restCfg, err := clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	restCfg.QPS, restCfg.Burst = float32(cfg.apiQPS), cfg.apiBurst
	tlsCfg, err := rest.TLSConfigFor(restCfg)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	// A transport of our own rather than client-go's shared cache, so
	// that stopping the agent closes its connections.
	c := &cluster{conns: &http.Transport{TLSClientConfig: tlsCfg, Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true}}
	rt, err := rest.HTTPWrappersForConfig(restCfg, c.conns)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	if c.client, err = kubernetes.NewForConfigAndClient(restCfg, &http.Client{Transport: rt}); err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	return c, nil
}

// close ends the connections, once everything using them has returned.
func (c *cluster) close() { c.conns.CloseIdleConnections() }
