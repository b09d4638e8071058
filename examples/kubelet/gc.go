package main

import (
	"flag"

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
	g.containers.AddFlags(fs)
	g.images.AddFlags(fs)
	fs.StringVar(&g.sandboxImage, "pod-infra-container-image", "", "sandbox image image GC keeps (default: the runtime's, when it says)")
}
