package main

import (
	"flag"
	"fmt"
	"time"

	kubeletconfig "k8s.io/kubelet/config/v1beta1"

	"github.com/nodekit-dev/nodekit/eviction"
	"github.com/nodekit-dev/nodekit/kubeletflags"
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

func applyEvictionConfig(set map[string]bool, e *evictionSettings, kc *kubeletconfig.KubeletConfiguration) {
	if kc.EvictionHard != nil && !set["eviction-hard"] { // {} is a value: no hard thresholds
		hard := kubeletflags.JoinMap(kc.EvictionHard, "<")
		e.flags.Hard = &hard
	}
	kubeletflags.Take(set, "eviction-soft", &e.flags.Soft, kubeletflags.JoinMap(kc.EvictionSoft, "<"))
	kubeletflags.Take(set, "eviction-soft-grace-period", &e.flags.SoftGracePeriod, kubeletflags.JoinMap(kc.EvictionSoftGracePeriod, "="))
	kubeletflags.Take(set, "eviction-minimum-reclaim", &e.flags.MinimumReclaim, kubeletflags.JoinMap(kc.EvictionMinimumReclaim, "="))
	kubeletflags.Take(set, "eviction-max-pod-grace-period", &e.maxPodGrace, int(kc.EvictionMaxPodGracePeriod))
	kubeletflags.Take(set, "eviction-pressure-transition-period", &e.transition, kc.EvictionPressureTransitionPeriod.Duration)
	if kc.MergeDefaultEvictionSettings != nil {
		e.flags.MergeDefaults = *kc.MergeDefaultEvictionSettings
	}
	e.localStorage = kc.LocalStorageCapacityIsolation
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
