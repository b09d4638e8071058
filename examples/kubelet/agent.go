package main

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/cgroupmgr"
	"github.com/nodekit-dev/nodekit/nodeagent"
	"github.com/nodekit-dev/nodekit/resources"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/runtimeconn"
)

// agent is the reference agent: a nodeagent.Agent with what this process
// adds around it, its flags, its metrics registry and API client (closed
// when it stops).
type agent struct {
	*nodeagent.Agent
	cfg      config
	log      logr.Logger
	registry *prometheus.Registry
	cluster  *nodeagent.APIClient // --kubeconfig's; nil: standalone
}

// newAgent composes a nodeagent.Agent from the flags over a connected
// runtime client; the registry it returns serves /metrics.
func newAgent(ctx context.Context, cfg config, log logr.Logger, client *runtime.Client) (*agent, *prometheus.Registry, error) {
	a := &agent{cfg: cfg, log: log, registry: prometheus.NewRegistry()}
	a.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), nodeagent.NodeNameMetric(cfg.hostname))
	probeRegistry := prometheus.NewRegistry() // /metrics/probes, as the kubelet's
	nc, err := cfg.nodeAgentConfig()
	if err != nil {
		return nil, nil, err
	}
	nc.Runtime, nc.RuntimeOnHost, nc.Log = client, ptr.To(runtimeconn.OnHost(ctx, client)), log
	nc.Registerer, nc.Gatherer, nc.ProbeRegisterer, nc.ProbeGatherer = a.registry, a.registry, probeRegistry, probeRegistry
	if cfg.kubeconfig != "" {
		rc, err := clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
		if err == nil {
			a.cluster, err = nodeagent.NewAPIClient(nodeagent.APIClientConfig{Rest: rc, QPS: float32(cfg.apiQPS), Burst: cfg.apiBurst, Registerer: a.registry})
		}
		if err != nil {
			return nil, nil, fmt.Errorf("--kubeconfig: %w", err)
		}
		nc.Client, nc.EventClient, nc.HeartbeatClient = a.cluster.Client, a.cluster.Events, a.cluster.Heartbeat
	}
	if a.Agent, err = nodeagent.New(ctx, nc); err != nil {
		a.close()
		return nil, nil, err
	}
	return a, a.registry, nil
}

// nodeAgentConfig is the flags' nodeagent.Config, without the parts
// newAgent connects (runtime, API client, registries, log).
func (cfg config) nodeAgentConfig() (nodeagent.Config, error) {
	kubeReserved, err := resources.ParseResourceList("--kube-reserved", cfg.kubeReserved)
	if err != nil {
		return nodeagent.Config{}, err
	}
	systemReserved, err := resources.ParseResourceList("--system-reserved", cfg.systemReserved)
	if err != nil {
		return nodeagent.Config{}, err
	}
	driver := cgroupmgr.DriverCgroupfs
	if cfg.cgroupDriver == "systemd" {
		driver = cgroupmgr.DriverSystemd
	}
	gcs := cfg.gc
	return nodeagent.Config{NodeName: cfg.hostname, NodeIP: cfg.hostIP, RootDir: cfg.rootDir, PodLogsDir: cfg.podLogsDir,
		ManifestPath: cfg.manifestPath, ManifestURL: cfg.manifestURL, SyncFrequency: cfg.syncFrequency, RelistPeriod: cfg.relistPeriod,
		FileCheckFrequency: cfg.fileCheckFreq, NodeStatusUpdateFrequency: cfg.nodeStatusFreq, CAdvisorHousekeepingInterval: cfg.housekeepingInterval,
		ContainerLogs: cfg.containerLogs, ContainersLogDir: cfg.containersLogDir, LeaseDurationSeconds: int32(cfg.leaseSeconds),
		MaxPods: cfg.maxPods, AllowedUnsafeSysctls: cfg.allowedUnsafeSysctls, ClusterDomain: cfg.clusterDomain, Port: int32(cfg.serving.Port), Labels: cfg.nodeLabels, Taints: cfg.taints,
		KubeReserved: kubeReserved, SystemReserved: systemReserved, CgroupsPerQOS: ptr.To(cfg.cgroupsPerQOS), FailCgroupV1: ptr.To(cfg.failCgroupV1),
		KubeletVersion: cfg.version.Version(), ControllerManagedAttachDetach: ptr.To(cfg.attachDetach),
		CgroupRoot: cfg.cgroupRoot, CgroupDriver: driver, SingleProcessOOMKill: cfg.singleProcessOOMKill, UserNamespacesIDsPerPod: cfg.usernsIDsPerPod,
		ContainerGC: &gcs.containers, ImageGC: &gcs.images, SandboxImage: gcs.sandboxImage,
		Eviction: &nodeagent.EvictionConfig{Flags: cfg.eviction.flags, PressureTransitionPeriod: cfg.eviction.transition,
			MaxPodGracePeriodSeconds: int64(cfg.eviction.maxPodGrace), LocalStorageCapacityIsolation: cfg.eviction.localStorage},
		EnableDebuggingHandlers: ptr.To(cfg.debugHandlers)}, nil
}

// run drives the agent until ctx ends, then closes its API connections.
func (a *agent) run(ctx context.Context) {
	if err := a.Run(ctx); err != nil {
		a.log.Error(err, "agent")
	}
	a.close()
}

func (a *agent) close() {
	if a.cluster != nil {
		a.cluster.Close() // once everything using it has returned
	}
}
