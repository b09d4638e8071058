package nodeagent

import (
	"context"
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"

	"github.com/nodekit-dev/nodekit/cgroupmgr"
	"github.com/nodekit-dev/nodekit/nodestatus"
	"github.com/nodekit-dev/nodekit/resources"
	"github.com/nodekit-dev/nodekit/runtime"
)

// describeNode computes the node's capacity and allocatable from the
// machine and the config, in both modes: the downward API reports
// allocatable for unset limits; in cluster mode it is also the Node.
func (a *Agent) describeNode(ctx context.Context) (*nodestatus.Builder, error) {
	cfg, client := a.cfg, a.cfg.Runtime
	var recorder nodestatus.EventRecorder // nil: standalone
	if a.cluster != nil {
		recorder = a.cluster.recorder
	}
	if err := os.MkdirAll(cfg.RootDir, 0o750); err != nil {
		return nil, fmt.Errorf("nodeagent: Config.RootDir: %w", err)
	}
	var mi nodestatus.MachineInfo
	if cfg.Machine != nil {
		mi = *cfg.Machine
	} else {
		var err error
		if mi, err = nodestatus.ReadMachineInfo(nodestatus.MachinePaths{RootDir: cfg.RootDir}); err != nil {
			return nil, err
		}
	}
	version := a.runtimeName
	if v, err := client.Version(ctx, runtime.CRIVersion); err == nil {
		version = v.RuntimeName + "://" + v.RuntimeVersion
	}
	var hard []resources.EvictionThreshold // nil: nodestatus's default
	if cfg.Eviction != nil {
		var err error
		if hard, err = cfg.Eviction.Flags.HardThresholds(); err != nil {
			return nil, fmt.Errorf("nodeagent: Config.Eviction.Flags: %w", err)
		}
	}
	nc := nodestatus.Config{NodeName: cfg.NodeName, NodeIP: cfg.NodeIP, Labels: cfg.Labels,
		KubeReserved: cfg.KubeReserved, SystemReserved: cfg.SystemReserved, HardEviction: hard, Recorder: recorder,
		Taints: cfg.Taints, MaxPods: cfg.MaxPods, Port: cfg.Port, Machine: mi, ContainerRuntimeVersion: version, KubeletVersion: cfg.KubeletVersion,
		ControllerManagedAttachDetach: cfg.ControllerManagedAttachDetach,
		Images:                        client, Clock: cfg.Clock, ReadyChecks: []nodestatus.Check{nodestatus.RuntimeCheck(client.RuntimeStatus),
			nodestatus.NetworkCheck(client.RuntimeStatus), nodestatus.PLEGCheck(a.pleg.Healthy)}}
	if a.eviction != nil { // no typed nils in the interfaces
		nc.Pressure = a.eviction
	}
	if a.cluster != nil && a.cluster.csiVolumes != nil {
		nc.VolumesInUse = a.cluster.csiVolumes.InUse
	}
	return nodestatus.New(nc)
}

// allocatable is the node's, once described (the plugins and the runtime
// manager ask only when pods sync, after New).
func (a *Agent) allocatable() v1.ResourceList {
	if a.node == nil {
		return nil
	}
	return a.node.Allocatable()
}

// admissionNode is the node the predicate admit handler reads: the one
// described from the machine and the config (allocatable), with, in
// cluster mode, the labels and taints of the Node in the API.
func (a *Agent) admissionNode() (*v1.Node, error) {
	local := a.node.ForAdmission()
	if a.cluster == nil {
		return local, nil
	}
	return withAPILabels(local, a.cluster.apiNode.Get()), nil
}

// withAPILabels gives local the labels and taints of api, the Node as the
// API server has it, when there is one: the kubelet admits against the
// Node its informer holds, so a label or taint set with kubectl counts at
// once. Allocatable stays local's: it is what the node posts.
func withAPILabels(local, api *v1.Node) *v1.Node {
	if api == nil {
		return local
	}
	local.Labels, local.Spec.Taints = api.Labels, api.Spec.Taints
	return local
}

// podMemoryLimit is the pod cgroup's memory limit in bytes (0: none), which
// bounds its memory-backed volumes' tmpfs as in the kubelet.
func podMemoryLimit(pod *v1.Pod) int64 {
	rc, err := cgroupmgr.ResourceConfigForPod(pod, cgroupmgr.PodOptions{})
	if err != nil || rc.Memory == nil {
		return 0
	}
	return *rc.Memory
}
