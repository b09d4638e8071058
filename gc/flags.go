package gc

import "flag"

// AddFlags registers the kubelet's container GC flags on fs, bound to p,
// with p's values as their defaults (DefaultContainerPolicy's, for the
// kubelet's): --minimum-container-ttl-duration,
// --maximum-dead-containers-per-container, --maximum-dead-containers.
func (p *ContainerPolicy) AddFlags(fs *flag.FlagSet) {
	fs.DurationVar(&p.MinAge, "minimum-container-ttl-duration", p.MinAge, "age of a dead container before it may be removed")
	fs.IntVar(&p.MaxPerPodContainer, "maximum-dead-containers-per-container", p.MaxPerPodContainer, "dead instances kept per container (-1: all)")
	fs.IntVar(&p.MaxContainers, "maximum-dead-containers", p.MaxContainers, "dead containers kept on the node (-1: no limit)")
}

// AddFlags registers the kubelet's image GC flags on fs, bound to p, with
// p's values as their defaults: --image-gc-high-threshold,
// --image-gc-low-threshold (MinAge and MaxAge are config fields only).
func (p *ImagePolicy) AddFlags(fs *flag.FlagSet) {
	fs.IntVar(&p.HighThresholdPercent, "image-gc-high-threshold", p.HighThresholdPercent, "image disk usage percent that starts image GC")
	fs.IntVar(&p.LowThresholdPercent, "image-gc-low-threshold", p.LowThresholdPercent, "image disk usage percent image GC frees down to")
}
