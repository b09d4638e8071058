package main

import (
	"flag"

	kubeletconfig "k8s.io/kubelet/config/v1beta1"

	"github.com/nodekit-dev/nodekit/gc"
	"github.com/nodekit-dev/nodekit/kubeletflags"
)

// gcSettings are the kubelet's garbage collection flags and fields.
type gcSettings struct {
	containers   gc.ContainerPolicy
	images       gc.ImagePolicy
	sandboxImage string // --pod-infra-container-image: kept by image GC
}

func addGCFlags(fs *flag.FlagSet, g *gcSettings) {
	g.containers, g.images = gc.DefaultContainerPolicy(), gc.DefaultImagePolicy()
	g.containers.AddFlags(fs)
	g.images.AddFlags(fs)
	fs.StringVar(&g.sandboxImage, "pod-infra-container-image", "", "sandbox image image GC keeps (default: the runtime's, when it says)")
}

func applyGCConfig(set map[string]bool, g *gcSettings, kc *kubeletconfig.KubeletConfiguration) {
	if kc.ImageGCHighThresholdPercent != nil && !set["image-gc-high-threshold"] {
		g.images.HighThresholdPercent = int(*kc.ImageGCHighThresholdPercent)
	}
	if kc.ImageGCLowThresholdPercent != nil && !set["image-gc-low-threshold"] {
		g.images.LowThresholdPercent = int(*kc.ImageGCLowThresholdPercent)
	}
	kubeletflags.Take(set, "", &g.images.MinAge, kc.ImageMinimumGCAge.Duration)
	kubeletflags.Take(set, "", &g.images.MaxAge, kc.ImageMaximumGCAge.Duration)
}
