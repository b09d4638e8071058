package nodeagent

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit-dev/nodekit/gc"
	"github.com/nodekit-dev/nodekit/podworkers"
)

// newGC builds the container and image collectors over the runtime: only
// this agent's sandboxes and their containers, pods gone once their
// worker is, nothing before every source has delivered.
func (a *Agent) newGC(ctx context.Context) error {
	cfg, client := a.cfg, a.cfg.Runtime
	var recorder gc.EventRecorder
	if a.cluster != nil {
		recorder = a.cluster.recorder
	}
	containersLogDir := ""
	if *cfg.RuntimeOnHost {
		containersLogDir = cfg.ContainersLogDir
	}
	var err error
	a.containerGC, err = gc.NewContainerGC(gc.ContainerConfig{Runtime: client, Policy: cfg.ContainerGC,
		PodState:        workersPodState{a.workers},
		AllSourcesReady: a.AllSourcesReady, SandboxSelector: map[string]string{NodeLabel: cfg.NodeName},
		PodLogsDir: cfg.PodLogsDir, ContainersLogDir: containersLogDir, Recorder: recorder, NodeName: cfg.NodeName, Clock: cfg.Clock, Log: a.log.WithName("container-gc")})
	if err != nil {
		return fmt.Errorf("nodeagent: Config.ContainerGC: %w", err)
	}
	a.sandboxImage = cfg.SandboxImage
	if img, err := client.SandboxImage(ctx); err == nil && img != "" {
		a.sandboxImage = img // the one the runtime really uses
	}
	a.imageGC, err = gc.NewImageGC(gc.ImageConfig{Images: client, Containers: client, Policy: cfg.ImageGC, SandboxImage: a.sandboxImage,
		Recorder: recorder, NodeName: cfg.NodeName, Clock: cfg.Clock, Log: a.log.WithName("image-gc")})
	if err != nil {
		return fmt.Errorf("nodeagent: Config.ImageGC: %w", err)
	}
	return nil
}

// workersPodState is the kubelet's pod state for GC, from the workers: a
// pod they forgot is gone (its content may go); a Terminated one (finished
// or evicted, its source still has it) keeps its dead containers and logs
// for kubectl logs, but under disk pressure the eviction manager's
// DeleteAllUnusedContainers may remove them (ShouldPodRuntimeBeRemoved).
type workersPodState struct{ w *podworkers.Workers }

func (s workersPodState) ShouldPodContentBeRemoved(uid types.UID) bool {
	_, known := s.w.State(uid)
	return !known
}

func (s workersPodState) ShouldPodRuntimeBeRemoved(uid types.UID) bool {
	st, known := s.w.State(uid)
	return !known || st == podworkers.Terminated
}
