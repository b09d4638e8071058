package nodeagent

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/nodekit-dev/nodekit/csi"
	csiapi "github.com/nodekit-dev/nodekit/csi/apiclient"
	"github.com/nodekit-dev/nodekit/csi/nodeinfo"
	"github.com/nodekit-dev/nodekit/events"
	"github.com/nodekit-dev/nodekit/kubeapi"
	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/mirrorpod"
	"github.com/nodekit-dev/nodekit/nodestatus"
	"github.com/nodekit-dev/nodekit/pluginmanager"
	"github.com/nodekit-dev/nodekit/podpath"
	"github.com/nodekit-dev/nodekit/podsource/apiserver"
	"github.com/nodekit-dev/nodekit/podstatus"
	"github.com/nodekit-dev/nodekit/podstatus/apiclient"
	"github.com/nodekit-dev/nodekit/volume"
	volumeapi "github.com/nodekit-dev/nodekit/volume/apiclient"
)

// cluster is what Config.Client adds: the Node and its lease, the API
// server's pods, mirror pods for the static ones, and events. Each agent
// records its own events (their source host is the node).
type cluster struct {
	api      kubeapi.Interface
	reporter *nodestatus.Reporter
	apiNode  *nodestatus.APINode  // the Node as the API has it, for admission
	services kuberuntime.Services // for the containers' environment
	own      *ServiceCache        // services, when the agent keeps its own
	mirrors  *mirrorpod.Manager
	statuses *podstatus.APIWriter
	objects  *volumeapi.Objects // ConfigMaps, Secrets and tokens for volumes, env and pull secrets
	tokens   *volume.Tokens
	recorder *events.Recorder
	// CSI drivers register through the plugin registry; the node info
	// manager records them on the Node and its CSINode.
	plugins    *pluginmanager.Manager
	csiDrivers *csi.Registry
	csiVolumes *csi.Volumes
	nodeInfo   *nodeinfo.Manager
}

// newCluster builds the API clients; the runtime manager's events go
// through the recorder it holds.
func newCluster(cfg Config) (*cluster, error) {
	c := &cluster{api: cfg.Client}
	var err error
	c.recorder, err = events.New(events.Config{Sink: kubeapi.EventSink{Client: orClient(cfg.EventClient, cfg.Client)},
		Source: v1.EventSource{Component: "kubelet", Host: cfg.NodeName}, Scheme: eventScheme(), CacheSize: cfg.EventCacheSize,
		Clock: cfg.Clock, Log: cfg.Log.WithName("events")})
	if err != nil {
		return nil, fmt.Errorf("nodeagent: Config.EventCacheSize %d: %w", cfg.EventCacheSize, err)
	}
	c.apiNode = nodestatus.NewAPINode(c.api, cfg.NodeName)
	c.services = cfg.Services
	if c.services == nil {
		c.own = NewServiceCache(c.api)
		c.services = c.own
	}
	if c.objects, err = volumeapi.New(c.api); err != nil {
		return nil, err
	}
	if c.tokens, err = volume.NewTokens(c.objects, nil); err != nil {
		return nil, err
	}
	if c.mirrors, err = mirrorpod.New(mirrorpod.Config{Client: c.api, NodeName: cfg.NodeName, Log: cfg.Log.WithName("mirrorpod")}); err != nil {
		return nil, err
	}
	if !*cfg.RuntimeOnHost {
		return c, nil // no plugins: a hollow node's volumes are not a host's
	}
	if c.nodeInfo, err = nodeinfo.New(nodeinfo.Config{Client: c.api, NodeName: cfg.NodeName}); err != nil {
		return nil, err
	}
	c.csiDrivers = csi.NewRegistry(csi.RegistryConfig{NodeInfo: c.nodeInfo, Log: cfg.Log.WithName("csi")})
	csiObjects, err := csiapi.New(c.api)
	if err != nil {
		return nil, err
	}
	pods := podpath.Layout{RootDir: cfg.RootDir}.PodsDir()
	c.csiVolumes = &csi.Volumes{Drivers: c.csiDrivers, RootDir: cfg.RootDir, Objects: csiObjects, NodeName: cfg.NodeName,
		Published: func() ([]string, error) {
			return filepath.Glob(filepath.Join(pods, "*", "volumes", (&volume.PersistentVolumeClaim{}).Name(), "*", csi.VolDataFile))
		}}
	c.plugins, err = pluginmanager.New(pluginmanager.Config{Dir: filepath.Join(cfg.RootDir, pluginmanager.DefaultDirName),
		Handlers: map[string]pluginmanager.Handler{registerapi.CSIPlugin: c.csiDrivers}, Clock: cfg.Clock, Log: cfg.Log.WithName("plugins")})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// wire adds the API source, the node status and the pod status API writer
// once the agent exists.
func (c *cluster) wire(a *Agent) error {
	var err error
	if c.reporter, err = nodestatus.NewReporter(nodestatus.ReporterConfig{Client: orClient(a.cfg.HeartbeatClient, c.api), Node: a.node,
		UpdateFrequency: a.cfg.NodeStatusUpdateFrequency, Clock: a.cfg.Clock, Log: a.log.WithName("nodestatus")}); err != nil {
		return err
	}
	api, err := apiclient.New(c.api)
	if err != nil {
		return err
	}
	if c.statuses, err = podstatus.NewAPIWriter(podstatus.APIWriterConfig{API: api, Statuses: a.statuses, Clock: a.cfg.Clock,
		MirrorPodFor: c.mirrors.StatusTarget, StatusWritten: a.startup.RecordStatusUpdated,
		StatusSynced: a.podMetrics.ObserveStatusSync, Log: a.log.WithName("status")}); err != nil {
		return err
	}
	src, err := apiserver.New(apiserver.Config{Client: c.api, NodeName: a.cfg.NodeName, Log: a.log.WithName("api")}, a.mux)
	if err != nil {
		return err
	}
	a.sources = append(a.sources, src)
	return nil
}

// eventScheme knows the kinds of the objects the agent's events are about
// (pods, their claims, the Node: the recorder finds their references with
// it), and no more: an agent of many in one process keeps a small one.
func eventScheme() *apiruntime.Scheme {
	s := apiruntime.NewScheme()
	s.AddKnownTypes(v1.SchemeGroupVersion, &v1.Pod{}, &v1.PersistentVolumeClaim{}, &v1.Node{})
	return s
}

// orClient is client, or fallback if it is nil.
func orClient(client, fallback kubeapi.Interface) kubeapi.Interface {
	if client == nil {
		return fallback
	}
	return client
}

// nodeRef is the Node as nodestatus refers to it in events.
func nodeRef(name string) *v1.ObjectReference {
	return &v1.ObjectReference{Kind: "Node", Name: name, UID: types.UID(name)}
}

// run keeps the Node, its lease and the events flowing until ctx ends.
func (c *cluster) run(ctx context.Context, a *Agent, wg *sync.WaitGroup) {
	c.recorder.Eventf(nodeRef(a.cfg.NodeName), v1.EventTypeNormal, "Starting", "Starting kubelet.")
	if a.cgroupV1 { // the kubelet's cgroupVersionCheck
		c.recorder.Event(nodeRef(a.cfg.NodeName), v1.EventTypeWarning, "CgroupV1", CgroupV1Warning)
	}
	lease := nodestatus.NewLease(orClient(a.cfg.HeartbeatClient, c.api), a.cfg.NodeName, a.cfg.LeaseDurationSeconds, a.cfg.Clock, nil)
	if c.own != nil {
		wg.Add(1)
		go func() { defer wg.Done(); c.own.Run(ctx) }()
	}
	if c.plugins != nil {
		wg.Add(2)
		go func() { defer wg.Done(); a.logError(c.plugins.Run(ctx), "plugin registry") }()
		go func() { defer wg.Done(); c.initializeCSINode(ctx, a) }()
	}
	wg.Add(5)
	go func() { defer wg.Done(); a.logError(c.recorder.Run(ctx), "events") }()
	go func() { defer wg.Done(); c.apiNode.Run(ctx) }()
	go func() { defer wg.Done(); a.logError(c.statuses.Run(ctx), "pod status") }()
	go func() { defer wg.Done(); a.logError(c.reporter.Run(ctx), "node status") }()
	go func() { defer wg.Done(); lease.Run(ctx) }()
}

// close ends the CSI drivers' connections; the client's are the
// caller's.
func (c *cluster) close() {
	if c.csiDrivers != nil {
		c.csiDrivers.Close()
	}
}

// initializeCSINode makes the node's CSINode once its Node is registered,
// retrying as the kubelet does (1s doubling to a minute) until it is.
func (c *cluster) initializeCSINode(ctx context.Context, a *Agent) {
	delay := time.Second
	for {
		err := c.nodeInfo.InitializeCSINode(ctx)
		if err == nil {
			return
		}
		a.log.V(2).Info("CSINode not initialized yet", "error", err.Error())
		select {
		case <-ctx.Done():
			return
		case <-a.cfg.Clock.After(delay):
		}
		delay = min(2*delay, time.Minute)
	}
}
