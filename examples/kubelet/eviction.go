package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"

	"github.com/nodekit-dev/nodekit/eviction"
	"github.com/nodekit-dev/nodekit/gc"
	"github.com/nodekit-dev/nodekit/podworkers"
	"github.com/nodekit-dev/nodekit/resources"
	"github.com/nodekit-dev/nodekit/runtime/fake"
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
	fs.Func("eviction-hard", "hard eviction thresholds, signal<quantity or %; set, it replaces the default "+
		resources.DefaultEvictionHard, func(v string) error { e.flags.Hard = &v; return nil })
	fs.StringVar(&e.flags.Soft, "eviction-soft", "", "soft eviction thresholds, each with a grace period")
	fs.StringVar(&e.flags.SoftGracePeriod, "eviction-soft-grace-period", "", "grace periods of the soft thresholds: memory.available=1m30s,...")
	fs.StringVar(&e.flags.MinimumReclaim, "eviction-minimum-reclaim", "", "what an eviction frees beyond its threshold: imagefs.available=2Gi,...")
	fs.IntVar(&e.maxPodGrace, "eviction-max-pod-grace-period", 0, "grace period, in seconds, of a pod evicted for a soft threshold")
	fs.DurationVar(&e.transition, "eviction-pressure-transition-period", eviction.DefaultPressureTransitionPeriod, "how long a pressure condition stays after its threshold is no longer met")
}

func applyEvictionConfig(set map[string]bool, e *evictionSettings, kc *kubeletconfig.KubeletConfiguration) {
	if kc.EvictionHard != nil && !set["eviction-hard"] { // {} is a value: no hard thresholds
		hard := joinMap(kc.EvictionHard, "<")
		e.flags.Hard = &hard
	}
	take(set, "eviction-soft", &e.flags.Soft, joinMap(kc.EvictionSoft, "<"))
	take(set, "eviction-soft-grace-period", &e.flags.SoftGracePeriod, joinMap(kc.EvictionSoftGracePeriod, "="))
	take(set, "eviction-minimum-reclaim", &e.flags.MinimumReclaim, joinMap(kc.EvictionMinimumReclaim, "="))
	take(set, "eviction-max-pod-grace-period", &e.maxPodGrace, int(kc.EvictionMaxPodGracePeriod))
	take(set, "eviction-pressure-transition-period", &e.transition, kc.EvictionPressureTransitionPeriod.Duration)
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

// newEviction builds the eviction manager over the node's real signals
// (statfs of --root-dir and of the runtime's filesystems, /proc, the
// cgroups), the summary's pod stats, and the pod workers: an evicted pod
// is killed with the eviction's grace period and keeps its Failed status.
func (a *agent) newEviction(client eviction.RuntimeFsInfo) error {
	lc := eviction.LinuxConfig{RootDir: a.cfg.rootDir}
	if a.runtimeName != fake.RuntimeName { // the fake's image filesystem is not on this machine
		lc.Runtime = client
	}
	if a.cgroups != nil {
		lc.KubepodsCgroup = strings.TrimPrefix(a.cgroups.Path(a.cgroups.KubepodsCgroupName()), "/")
	}
	signals, err := eviction.NewLinuxSignals(lc)
	if err != nil {
		return err
	}
	cfg := eviction.Config{Thresholds: a.cfg.eviction.thresholds, PressureTransitionPeriod: a.cfg.eviction.transition,
		MaxPodGracePeriodSeconds: int64(a.cfg.eviction.maxPodGrace), LocalStorageCapacityIsolation: a.cfg.eviction.localStorage,
		Summary: a.summary, Signals: signals, DiskInfo: signals, Pods: eviction.PodListerFunc(a.workers.Pods),
		Killer: eviction.PodKillerFunc(a.evict), Reclaimer: gc.NodeReclaimer{Containers: a.containerGC, Images: a.imageGC},
		PodCleanedUp: a.workers.IsTerminated, Clock: a.clock, Log: a.log.WithName("eviction")}
	if a.cluster != nil {
		cfg.Recorder = a.cluster.recorder
		cfg.NodeRef = &v1.ObjectReference{Kind: "Node", Name: a.cfg.hostname, UID: types.UID(a.cfg.hostname)}
	}
	a.eviction, err = eviction.New(cfg)
	return err
}

// evict kills an evicted pod through its worker and waits, as the
// kubelet's killPodNow.
func (a *agent) evict(ctx context.Context, e eviction.Eviction) error {
	return a.workers.KillPodNow(ctx, e.Pod, podworkers.KillPodOptions{GracePeriodSecondsOverride: &e.GracePeriodSeconds,
		Status: e.UpdateStatus})
}
