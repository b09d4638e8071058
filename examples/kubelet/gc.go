package main

import (
	"flag"

	kubeletconfig "k8s.io/kubelet/config/v1beta1"

	"github.com/nodekit-dev/nodekit/gc"
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
