package nodeagent

import (
	"context"
	"fmt"
	"strings"

	"github.com/nodekit-dev/nodekit/eviction"
	"github.com/nodekit-dev/nodekit/gc"
	"github.com/nodekit-dev/nodekit/podworkers"
)

// newEviction builds the eviction manager over the node's real signals
// (statfs of RootDir and of the runtime's filesystems, /proc, the
// cgroups), the summary's pod stats, and the pod workers: an evicted pod
// is killed with the eviction's grace period and keeps its Failed status.
// Without Config.Eviction there is none.
func (a *Agent) newEviction() error {
	ec := a.cfg.Eviction
	if ec == nil {
		return nil
	}
	thresholds, err := eviction.ParseFlags(ec.Flags)
	if err != nil {
		return fmt.Errorf("nodeagent: Config.Eviction.Flags: %w", err)
	}
	lc := eviction.LinuxConfig{RootDir: a.cfg.RootDir}
	if *a.cfg.RuntimeOnHost { // else its image filesystem is not on this machine
		lc.Runtime = a.cfg.Runtime
	}
	if a.cgroups != nil {
		lc.KubepodsCgroup = strings.TrimPrefix(a.cgroups.Path(a.cgroups.KubepodsCgroupName()), "/")
	}
	signals, err := eviction.NewLinuxSignals(lc)
	if err != nil {
		return err
	}
	cfg := eviction.Config{Thresholds: thresholds, PressureTransitionPeriod: ec.PressureTransitionPeriod,
		MaxPodGracePeriodSeconds: ec.MaxPodGracePeriodSeconds, LocalStorageCapacityIsolation: ec.LocalStorageCapacityIsolation,
		Summary: a.summary, Signals: signals, DiskInfo: signals, Pods: eviction.ActivePodsFunc(a.workers.Pods),
		Killer: eviction.PodKillerFunc(a.evict), Reclaimer: gc.NodeReclaimer{Containers: a.containerGC, Images: a.imageGC},
		PodCleanedUp: a.workers.IsTerminated, Clock: a.cfg.Clock, Log: a.log.WithName("eviction")}
	if a.cluster != nil {
		cfg.Recorder = a.cluster.recorder
		cfg.NodeRef = nodeRef(a.cfg.NodeName)
	}
	a.eviction, err = eviction.New(cfg)
	return err
}

// evict kills an evicted pod through its worker and waits, as the
// kubelet's killPodNow.
func (a *Agent) evict(ctx context.Context, e eviction.Eviction) error {
	return a.workers.KillPodNow(ctx, e.Pod, podworkers.KillPodOptions{GracePeriodSecondsOverride: &e.GracePeriodSeconds,
		Status: e.UpdateStatus})
}
