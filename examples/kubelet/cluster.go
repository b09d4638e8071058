package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"

	"github.com/nodekit-dev/nodekit/mirrorpod"
	"github.com/nodekit-dev/nodekit/nodestatus"
	"github.com/nodekit-dev/nodekit/podsource/apiserver"
	"github.com/nodekit-dev/nodekit/podstatus"
	"github.com/nodekit-dev/nodekit/podstatus/apiclient"
	"github.com/nodekit-dev/nodekit/volume"
	volumeapi "github.com/nodekit-dev/nodekit/volume/apiclient"
)

// cluster is what --kubeconfig adds: the Node and its lease, the API
// server's pods, mirror pods for the static ones, and events.
type cluster struct {
	client   kubernetes.Interface
	conns    *http.Transport // closed when the agent stops: nothing left behind
	reporter *nodestatus.Reporter
	mirrors  *mirrorpod.Manager
	statuses *podstatus.Syncer
	objects  *volumeapi.Objects // ConfigMaps, Secrets and tokens for volumes and env
	tokens   *volume.Tokens
	events   record.EventBroadcaster
	recorder record.EventRecorder
}

// newCluster connects to the API server; the runtime manager's events go
// through the recorder it returns.
func newCluster(ctx context.Context, cfg config) (*cluster, error) {
	restCfg, err := clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	restCfg.QPS, restCfg.Burst = float32(cfg.apiQPS), cfg.apiBurst
	c := &cluster{events: record.NewBroadcaster(record.WithContext(ctx))}
	tlsCfg, err := rest.TLSConfigFor(restCfg)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	// A transport of our own rather than client-go's shared cache, so
	// that stopping the agent closes its connections.
	c.conns = &http.Transport{TLSClientConfig: tlsCfg, Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true}
	rt, err := rest.HTTPWrappersForConfig(restCfg, c.conns)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	if c.client, err = kubernetes.NewForConfigAndClient(restCfg, &http.Client{Transport: rt}); err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	c.recorder = c.events.NewRecorder(scheme.Scheme, v1.EventSource{Component: "kubelet", Host: cfg.hostname})
	if c.objects, err = volumeapi.New(c.client); err != nil {
		return nil, err
	}
	if c.tokens, err = volume.NewTokens(c.objects, nil); err != nil {
		return nil, err
	}
	if c.mirrors, err = mirrorpod.New(mirrorpod.Config{Client: c.client, NodeName: cfg.hostname}); err != nil {
		return nil, err
	}
	return c, nil
}

// wire adds the API source, the node status and the pod status syncer
// once the agent exists.
func (c *cluster) wire(a *agent) error {
	var err error
	if c.reporter, err = nodestatus.NewReporter(nodestatus.ReporterConfig{Client: c.client, Node: a.node,
		UpdateFrequency: a.cfg.nodeStatusFreq, Clock: a.clock, Log: a.log.WithName("nodestatus")}); err != nil {
		return err
	}
	api, err := apiclient.New(c.client)
	if err != nil {
		return err
	}
	if c.statuses, err = podstatus.NewSyncer(podstatus.SyncerConfig{API: api, Statuses: a.statuses, Clock: a.clock,
		MirrorPodFor: c.mirrors.StatusTarget, Log: a.log.WithName("status")}); err != nil {
		return err
	}
	src, err := apiserver.New(apiserver.Config{Client: c.client, NodeName: a.cfg.hostname, Log: a.log.WithName("api")}, a.mux)
	if err != nil {
		return err
	}
	a.sources = append(a.sources, src)
	return nil
}

// run keeps the Node, its lease and the events flowing until ctx ends.
func (c *cluster) run(ctx context.Context, a *agent, wg *sync.WaitGroup) {
	c.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.client.CoreV1().Events("")})
	nodeRef := &v1.ObjectReference{Kind: "Node", Name: a.cfg.hostname, UID: types.UID(a.cfg.hostname)} // as nodestatus refers to it
	c.recorder.Eventf(nodeRef, v1.EventTypeNormal, "Starting", "Starting kubelet.")
	lease := nodestatus.NewLease(c.client, a.cfg.hostname, int32(a.cfg.leaseSeconds), a.clock, nil)
	wg.Add(3)
	go func() { defer wg.Done(); a.logError(c.statuses.Run(ctx), "pod status") }()
	go func() { defer wg.Done(); a.logError(c.reporter.Run(ctx), "node status") }()
	go func() { defer wg.Done(); lease.Run(ctx) }()
}

// close ends the events and the connections, once everything using them
// has returned.
func (c *cluster) close() {
	c.events.Shutdown()
	c.conns.CloseIdleConnections()
}
