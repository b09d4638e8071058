package main

import (
	"context"
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"

	"github.com/nodekit-dev/nodekit/nodestatus"
	"github.com/nodekit-dev/nodekit/pleg"
	"github.com/nodekit-dev/nodekit/resources"
	"github.com/nodekit-dev/nodekit/runtime"
)

// describeNode computes the node's capacity and allocatable from the
// machine and the flags, in both modes: the downward API reports
// allocatable for unset limits; in cluster mode it is also the Node.
func describeNode(ctx context.Context, cfg config, client *runtime.Client, runtimeName string, p pleg.PLEG,
	pressure nodestatus.Pressure, recorder nodestatus.EventRecorder) (*nodestatus.Node, error) {
	if err := os.MkdirAll(cfg.rootDir, 0o750); err != nil {
		return nil, fmt.Errorf("--root-dir: %w", err)
	}
	mi, err := nodestatus.ReadMachineInfo(nodestatus.MachinePaths{RootDir: cfg.rootDir})
	if err != nil {
		return nil, err
	}
	version := runtimeName
	if v, err := client.Version(ctx, runtime.CRIVersion); err == nil {
		version = v.RuntimeName + "://" + v.RuntimeVersion
	}
	kubeReserved, _ := resources.ParseResourceList("--kube-reserved", cfg.kubeReserved) // checked by parseFlags
	systemReserved, _ := resources.ParseResourceList("--system-reserved", cfg.systemReserved)
	eviction, _ := cfg.eviction.flags.HardThresholds() // checked by parseFlags
	return nodestatus.New(nodestatus.Config{NodeName: cfg.hostname, NodeIP: cfg.hostIP, Labels: cfg.nodeLabels,
		KubeReserved: kubeReserved, SystemReserved: systemReserved, HardEviction: eviction, Pressure: pressure, Recorder: recorder,
		Taints: cfg.taints, MaxPods: cfg.maxPods, Port: int32(cfg.serving.port), Machine: mi, ContainerRuntimeVersion: version,
		Images: client, ReadyChecks: []nodestatus.Check{nodestatus.RuntimeCheck(client.RuntimeStatus),
			nodestatus.NetworkCheck(client.RuntimeStatus), nodestatus.PLEGCheck(p.Healthy)}})
}

// allocatable is the node's, once described (the plugins and the runtime
// manager ask only when pods sync, after newAgent).
func (a *agent) allocatable() v1.ResourceList {
	if a.node == nil {
		return nil
	}
	return a.node.Allocatable()
}

// admissionNode is the node the predicate admit handler reads: the one
// described from the machine and the flags (labels, taints, allocatable).
func (a *agent) admissionNode() (*v1.Node, error) { return a.node.ForAdmission(), nil }
