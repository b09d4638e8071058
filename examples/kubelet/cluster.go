package main

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodekit-dev/nodekit/nodeagent"
)

// cluster is --kubeconfig's API client, over connections of its own.
type cluster struct {
	client kubernetes.Interface
	conns  *nodeagent.APIConnections // closed when the agent stops: nothing left behind
}

// newCluster builds the API client from --kubeconfig, --kube-api-qps and
// --kube-api-burst; nodeagent does the rest of cluster mode.
func newCluster(cfg config) (*cluster, error) {
	restCfg, err := clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	restCfg.QPS, restCfg.Burst = float32(cfg.apiQPS), cfg.apiBurst
	c := &cluster{}
	if c.conns, err = nodeagent.NewAPIConnections(restCfg); err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	if c.client, err = c.conns.Client(restCfg); err != nil {
		c.conns.Close()
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	return c, nil
}

// close ends the connections, once everything using them has returned.
func (c *cluster) close() { c.conns.Close() }
