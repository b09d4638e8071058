package main

import (
	"context"
	"flag"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"

	"github.com/nodekit-dev/nodekit/gc"
	"github.com/nodekit-dev/nodekit/runtime"
)

// gcSettings are the kubelet's garbage collection flags and fields.
type gcSettings struct {
	containers   gc.ContainerPolicy
	images       gc.ImagePolicy
	sandboxImage string // --pod-infra-container-image: kept by image GC
}

func addGCFlags(fs *flag.FlagSet, g *gcSettings) {
	g.containers, g.images = gc.DefaultContainerPolicy(), gc.DefaultImagePolicy()
	fs.DurationVar(&g.containers.MinAge, "minimum-container-ttl-duration", g.containers.MinAge, "age of a dead container before it may be removed")
	fs.IntVar(&g.containers.MaxPerPodContainer, "maximum-dead-containers-per-container", g.containers.MaxPerPodContainer, "dead instances kept per container (-1: all)")
	fs.IntVar(&g.containers.MaxContainers, "maximum-dead-containers", g.containers.MaxContainers, "dead containers kept on the node (-1: no limit)")
	fs.IntVar(&g.images.HighThresholdPercent, "image-gc-high-threshold", g.images.HighThresholdPercent, "image disk usage percent that starts image GC")
	fs.IntVar(&g.images.LowThresholdPercent, "image-gc-low-threshold", g.images.LowThresholdPercent, "image disk usage percent image GC frees down to")
	fs.StringVar(&g.sandboxImage, "pod-infra-container-image", "", "sandbox image image GC keeps (default: the runtime's, when it says)")
}

func applyGCConfig(set map[string]bool, g *gcSettings, kc *kubeletconfig.KubeletConfiguration) {
	if kc.ImageGCHighThresholdPercent != nil && !set["image-gc-high-threshold"] {
		g.images.HighThresholdPercent = int(*kc.ImageGCHighThresholdPercent)
	}
	if kc.ImageGCLowThresholdPercent != nil && !set["image-gc-low-threshold"] {
		g.images.LowThresholdPercent = int(*kc.ImageGCLowThresholdPercent)
	}
	take(set, "", &g.images.MinAge, kc.ImageMinimumGCAge.Duration)
	take(set, "", &g.images.MaxAge, kc.ImageMaximumGCAge.Duration)
}

// newGC builds the container and image collectors over the runtime: only
// this agent's sandboxes and their containers, pods gone once their
// worker is, nothing before every source has delivered.
func (a *agent) newGC(ctx context.Context, client *runtime.Client) error {
	g := a.cfg.gc
	var recorder gc.EventRecorder
	if a.cluster != nil {
		recorder = a.cluster.recorder
	}
	var err error
	a.containerGC, err = gc.NewContainerGC(gc.ContainerConfig{Runtime: client, Policy: &g.containers,
		PodState:        gc.PodStateFunc(func(uid types.UID) bool { return !a.workers.Known()[uid] }),
		AllSourcesReady: a.mux.AllSourcesReady, SandboxSelector: map[string]string{nodeLabel: a.cfg.hostname},
		PodLogsDir: a.cfg.podLogsDir, Recorder: recorder, NodeName: a.cfg.hostname, Clock: a.clock, Log: a.log.WithName("container-gc")})
	if err != nil {
		return fmt.Errorf("container GC: %w", err)
	}
	sandboxImage := g.sandboxImage
	if img, err := client.SandboxImage(ctx); err == nil && img != "" {
		sandboxImage = img // the one the runtime really uses
	}
	a.imageGC, err = gc.NewImageGC(gc.ImageConfig{Images: client, Containers: client, Policy: &g.images, SandboxImage: sandboxImage,
		Recorder: recorder, NodeName: a.cfg.hostname, Clock: a.clock, Log: a.log.WithName("image-gc")})
	if err != nil {
		return fmt.Errorf("image GC: %w", err)
	}
	return nil
}
