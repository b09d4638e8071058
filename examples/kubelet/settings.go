package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/nodekit-dev/nodekit/eviction"
	"github.com/nodekit-dev/nodekit/gc"
)

// evictionSettings are the kubelet's eviction flags and fields.
type evictionSettings struct {
	flags        eviction.Flags
	maxPodGrace  int
	transition   time.Duration
	localStorage *bool // localStorageCapacityIsolation (config file only)
	thresholds   []eviction.Threshold
}

func addEvictionFlags(fs *flag.FlagSet, e *evictionSettings) {
	e.flags.AddFlags(fs)
	fs.IntVar(&e.maxPodGrace, "eviction-max-pod-grace-period", 0, "grace period, in seconds, of a pod evicted for a soft threshold")
	fs.DurationVar(&e.transition, "eviction-pressure-transition-period", eviction.DefaultPressureTransitionPeriod, "how long a pressure condition stays after its threshold is no longer met")
}

// finish checks the thresholds; errors name the flag and the bad part.
func (e *evictionSettings) finish() error {
	if e.transition < 0 {
		return fmt.Errorf("--eviction-pressure-transition-period: invalid value %s: must not be negative", e.transition)
	}
	var err error
	e.thresholds, err = eviction.ParseFlags(e.flags)
	return err
}

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
	fs.StringVar(&g.sandboxImage, "pod-infra-container-image", "", "sandbox image image GC keeps (default: the runtime's, when it says); the kubelet dropped this flag in v1.35, the agent keeps it")
}
