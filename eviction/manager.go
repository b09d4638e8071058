package eviction

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"

	"github.com/nodekit-dev/nodekit/admission"
	"github.com/nodekit-dev/nodekit/resources"
)

// The kubelet's defaults.
const (
	// DefaultMonitoringInterval is how often Run evaluates the thresholds
	// (the kubelet's evictionMonitoringPeriod).
	DefaultMonitoringInterval = 10 * time.Second
	// DefaultPressureTransitionPeriod is how long a pressure condition stays
	// true after its last threshold was met (--eviction-pressure-transition-period).
	DefaultPressureTransitionPeriod = 5 * time.Minute
	// PodCleanupTimeout and PodCleanupPollInterval: after an eviction, Run
	// waits up to PodCleanupTimeout for the pod to be cleaned up, looking
	// every PodCleanupPollInterval, before the next pass.
	PodCleanupTimeout      = 30 * time.Second
	PodCleanupPollInterval = time.Second
)

// Config configures a Manager; zero fields take the kubelet's defaults.
// Summary, Pods and Killer are required.
type Config struct {
	// Thresholds to enforce; nil: DefaultThresholds(), empty: none (local
	// storage limits are still enforced). ParseFlags makes them from the
	// kubelet's flags.
	Thresholds []Threshold
	// PressureTransitionPeriod is --eviction-pressure-transition-period (5m).
	PressureTransitionPeriod time.Duration
	// MaxPodGracePeriodSeconds is --eviction-max-pod-grace-period (0): the
	// grace period of a pod evicted for a soft threshold, capped by its own.
	MaxPodGracePeriodSeconds int64
	// MonitoringInterval is how often Run evaluates (10s).
	MonitoringInterval time.Duration
	// LocalStorageCapacityIsolation (the kubelet's
	// localStorageCapacityIsolation, default true) evicts pods over their
	// emptyDir sizeLimit or ephemeral-storage limits.
	LocalStorageCapacityIsolation *bool

	Summary SummaryProvider
	// Signals, if set, reads the node's signals (LinuxSignals); those it
	// gives replace the summary's.
	Signals SignalProvider
	Pods    ActivePods
	Killer  PodKiller
	// Reclaimer, if set, frees disk before pods are evicted for disk
	// pressure.
	Reclaimer NodeReclaimer
	// DiskInfo, if set, tells whether the runtime has its own filesystems
	// (FsLayout); nil: one filesystem.
	DiskInfo DiskInfo
	// PodCleanedUp, if set, reports whether an evicted pod is gone (its
	// containers removed, volumes unmounted); Run waits for it up to
	// PodCleanupTimeout before the next pass.
	PodCleanedUp func(*v1.Pod) bool
	// Recorder and NodeRef, if set, get the kubelet's events.
	Recorder EventRecorder
	NodeRef  *v1.ObjectReference
	Clock    clock.WithTicker
	Log      logr.Logger
}

// Manager is the kubelet's eviction manager: every MonitoringInterval it
// observes the signals, reports the MemoryPressure, DiskPressure and
// PIDPressure conditions (it implements nodestatus.Pressure), and when a
// threshold is met reclaims disk at node level or evicts one pod. It is
// safe for concurrent use.
//
// Its decisions are pure and table-tested: a threshold is met when
// available < value; a soft one acts after its grace period; a condition
// holds while a threshold of it was met within the pressure transition
// period (5m); a met threshold stays met until its minimum reclaim is
// reclaimed too; disk pressure first deletes unused containers and images
// (NodeReclaimer) and observes again; pods are ranked (Rank) by usage above
// request, priority and usage; static, mirror and critical pods are never
// evicted; pods over their emptyDir sizeLimit or ephemeral-storage limits
// are evicted first (LocalStorageEvictions). Observations come from a
// SummaryProvider (the Summary API, which also gives each pod's usage) and,
// if set, a SignalProvider: LinuxSignals reads them as the kubelet's
// cadvisor does (root and kubepods cgroups v1 or v2, statfs of --root-dir
// and of the runtime's filesystems, pid_max). The PodKiller kills the pod
// (1 s grace for a hard threshold) and publishes the status
// Eviction.UpdateStatus makes (Failed, reason Evicted, the kubelet's
// message, DisruptionTarget).
type Manager struct {
	cfg          Config
	localStorage bool
	log          logr.Logger
	clock        clock.WithTicker
	running      atomic.Bool

	pass       sync.Mutex // one Synchronize at a time
	thresholds []Threshold
	layout     *FsLayout

	mu    sync.Mutex
	state *state
}

// New checks cfg and fills in the kubelet's defaults.
func New(cfg Config) (*Manager, error) {
	var missing []string
	for name, set := range map[string]bool{"Summary": cfg.Summary != nil, "Pods": cfg.Pods != nil, "Killer": cfg.Killer != nil} {
		if !set {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, fmt.Errorf("eviction: Config.%v: Required value", missing)
	}
	if cfg.Thresholds == nil {
		cfg.Thresholds = DefaultThresholds()
	}
	for i, t := range cfg.Thresholds {
		if err := t.validate(fmt.Sprintf("Config.Thresholds[%d]", i)); err != nil {
			return nil, err
		}
	}
	for name, d := range map[string]*time.Duration{"PressureTransitionPeriod": &cfg.PressureTransitionPeriod,
		"MonitoringInterval": &cfg.MonitoringInterval} {
		if *d < 0 {
			return nil, fmt.Errorf("eviction: Config.%s: Invalid value: %s: must not be negative", name, *d)
		}
	}
	if cfg.PressureTransitionPeriod == 0 {
		cfg.PressureTransitionPeriod = DefaultPressureTransitionPeriod
	}
	if cfg.MonitoringInterval == 0 {
		cfg.MonitoringInterval = DefaultMonitoringInterval
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	cfg.Thresholds = slices.Clone(cfg.Thresholds)
	return &Manager{cfg: cfg, localStorage: cfg.LocalStorageCapacityIsolation == nil || *cfg.LocalStorageCapacityIsolation,
		log: cfg.Log.WithName("eviction"), clock: cfg.Clock, state: newState()}, nil
}

// Run evaluates every MonitoringInterval until ctx ends; after an
// eviction it waits for the pod's clean-up instead (PodCleanedUp). It
// returns nil when ctx ends, and an error if called twice.
func (m *Manager) Run(ctx context.Context) error {
	if !m.running.CompareAndSwap(false, true) {
		return errors.New("eviction: Run called twice")
	}
	for ctx.Err() == nil {
		evicted, err := m.Synchronize(ctx)
		if err != nil {
			m.log.Error(err, "Eviction manager: failed to synchronize")
		}
		if len(evicted) > 0 && err == nil && m.cfg.PodCleanedUp != nil {
			m.waitForCleanup(ctx, evicted)
			continue
		}
		t := m.clock.NewTimer(m.cfg.MonitoringInterval)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C():
		}
	}
	return nil
}

func (m *Manager) waitForCleanup(ctx context.Context, pods []*v1.Pod) {
	timeout := m.clock.NewTimer(PodCleanupTimeout)
	defer timeout.Stop()
	tick := m.clock.NewTicker(PodCleanupPollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timeout.C():
			m.log.Info("Eviction manager: timed out waiting for pods to be cleaned up", "pods", podNames(pods))
			return
		case <-tick.C():
			if !slices.ContainsFunc(pods, func(p *v1.Pod) bool { return !m.cfg.PodCleanedUp(p) }) {
				m.log.Info("Eviction manager: pods successfully cleaned up", "pods", podNames(pods))
				return
			}
		}
	}
}

// Conditions are the pressure conditions the node has now, in the order
// MemoryPressure, DiskPressure, PIDPressure.
func (m *Manager) Conditions() []v1.NodeConditionType {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.state.conditions)
}

// MemoryPressure reports the MemoryPressure condition.
func (m *Manager) MemoryPressure() bool { return hasCondition(m.Conditions(), v1.NodeMemoryPressure) }

// DiskPressure reports the DiskPressure condition.
func (m *Manager) DiskPressure() bool { return hasCondition(m.Conditions(), v1.NodeDiskPressure) }

// PIDPressure reports the PIDPressure condition.
func (m *Manager) PIDPressure() bool { return hasCondition(m.Conditions(), v1.NodePIDPressure) }

// Admit is Admit(pod, m.Conditions()): a Manager is an admission.PodAdmitHandler.
func (m *Manager) Admit(pod *v1.Pod) admission.PodAdmitResult { return Admit(pod, m.Conditions()) }

// Synchronize is one pass of the kubelet's eviction manager: observe,
// update the conditions, evict the pods over their local storage limits,
// and, if a threshold is met past its grace period with fresh stats,
// reclaim at node level (disk) or evict the first pod of the ranking
// that is not critical. It returns the pods evicted. A failure to read
// the stats is logged and ends the pass; an error means the filesystem
// layout could not be told (DiskInfo), and nothing was done.
func (m *Manager) Synchronize(ctx context.Context) ([]*v1.Pod, error) {
	m.pass.Lock()
	defer m.pass.Unlock()
	if len(m.cfg.Thresholds) == 0 && !m.localStorage {
		return nil, nil
	}
	if m.layout == nil {
		layout, err := m.detectLayout(ctx)
		if err != nil {
			return nil, err
		}
		ts, warn := containerFsThresholds(m.cfg.Thresholds, layout != SharedFs, layout == SplitImageFs)
		if warn != nil {
			m.log.Error(warn, "Eviction manager: found conflicting containerfs eviction. Ignoring.")
		}
		m.thresholds, m.layout = ts, &layout
	}
	layout := *m.layout
	pods := m.cfg.Pods.ActivePods()
	summary, obs, err := m.observe(ctx)
	if err != nil {
		m.log.Error(err, "Eviction manager: failed to get summary stats")
		return nil, nil
	}
	now := m.clock.Now()
	m.mu.Lock()
	act := m.state.step(m.thresholds, obs, now, m.cfg.PressureTransitionPeriod)
	m.mu.Unlock()
	stats := PodStatsFromSummary(summary)

	if m.localStorage {
		if evs := LocalStorageEvictions(pods, stats, layout, now); len(evs) > 0 {
			evicted := make([]*v1.Pod, len(evs))
			for i, e := range evs {
				m.evict(ctx, e)
				evicted[i] = e.Pod
			}
			return evicted, nil
		}
	}
	if len(act) == 0 {
		m.log.V(3).Info("Eviction manager: no resources are starved")
		return nil, nil
	}
	// Memory first (the kubelet's byEvictionPriority), then as configured.
	slices.SortStableFunc(act, func(a, b int) int {
		return cmpBool(signalResource[m.thresholds[a].Signal] == v1.ResourceMemory,
			signalResource[m.thresholds[b].Signal] == v1.ResourceMemory)
	})
	t := m.thresholds[act[0]]
	res := signalResource[t.Signal]
	m.log.Info("Eviction manager: attempting to reclaim", "resourceName", res)
	if m.cfg.Recorder != nil && m.cfg.NodeRef != nil {
		m.cfg.Recorder.Eventf(m.cfg.NodeRef, v1.EventTypeWarning, "EvictionThresholdMet", "Attempting to reclaim %s", res)
	}
	if m.reclaimNodeLevel(ctx, t.Signal, layout) {
		m.log.Info("Eviction manager: able to reduce resource pressure without evicting pods.", "resourceName", res)
		return nil, nil
	}
	if len(pods) == 0 {
		m.log.Error(nil, "Eviction manager: eviction thresholds have been met, but no pods are active to evict")
		return nil, nil
	}
	ranked := slices.Clone(pods)
	Rank(t.Signal, ranked, stats, layout)
	for _, pod := range ranked {
		if resources.IsCriticalPod(pod) {
			m.log.Error(nil, "Eviction manager: cannot evict a critical pod", "pod", podName(pod))
			continue
		}
		m.evict(ctx, thresholdEviction(pod, t, res, m.thresholds, act, obs, stats.of(pod), m.cfg.MaxPodGracePeriodSeconds, now))
		return []*v1.Pod{pod}, nil
	}
	m.log.Info("Eviction manager: unable to evict any pods from the node")
	return nil, nil
}

func (m *Manager) detectLayout(ctx context.Context) (FsLayout, error) {
	if m.cfg.DiskInfo == nil {
		return SharedFs, nil
	}
	image, err := m.cfg.DiskInfo.HasDedicatedImageFs(ctx)
	if err != nil {
		return 0, fmt.Errorf("eviction: HasDedicatedImageFs: %w", err)
	}
	split, err := m.cfg.DiskInfo.HasDedicatedContainerFs(ctx)
	if err != nil {
		m.log.Error(err, "Eviction manager: failed to check if we have separate container filesystem. Ignoring.")
		split = false
	}
	switch {
	case image && split:
		return SplitImageFs, nil
	case image:
		return DedicatedImageFs, nil
	}
	return SharedFs, nil
}

// observe reads the summary and the signals.
func (m *Manager) observe(ctx context.Context) (*statsapi.Summary, Observations, error) {
	summary, err := m.cfg.Summary.Summary(ctx)
	if err != nil {
		return nil, nil, err
	}
	obs := ObservationsFromSummary(summary)
	if m.cfg.Signals != nil {
		sig, err := m.cfg.Signals.Signals(ctx)
		if err != nil {
			m.log.Error(err, "Eviction manager: failed to read some signals")
		}
		for k, v := range sig {
			obs[k] = v
		}
	}
	return summary, obs, nil
}

// reclaimNodeLevel is the kubelet's reclaimNodeLevelResources: for a disk
// signal, delete unused containers and images as the layout says, observe
// again, and report whether no threshold is met any more (minimum
// reclaims included).
func (m *Manager) reclaimNodeLevel(ctx context.Context, signal string, layout FsLayout) bool {
	containers, images := layout.reclaim(signal)
	if m.cfg.Reclaimer == nil || !containers && !images {
		return false
	}
	res := signalResource[signal]
	if containers {
		if err := m.cfg.Reclaimer.DeleteAllUnusedContainers(ctx); err != nil {
			m.log.Info("Eviction manager: unexpected error when attempting to reduce resource pressure", "resourceName", res, "err", err)
		}
	}
	if images {
		if err := m.cfg.Reclaimer.DeleteUnusedImages(ctx); err != nil {
			m.log.Info("Eviction manager: unexpected error when attempting to reduce resource pressure", "resourceName", res, "err", err)
		}
	}
	_, obs, err := m.observe(ctx)
	if err != nil {
		m.log.Error(err, "Eviction manager: failed to get summary stats after resource reclaim")
		return false
	}
	return len(thresholdsMet(m.thresholds, allIndexes(len(m.thresholds)), obs, true)) == 0
}

// evict records the pod's Evicted event and kills it; a kill error is
// logged, and the pod counts as evicted, as in the kubelet.
func (m *Manager) evict(ctx context.Context, e Eviction) {
	if m.cfg.Recorder != nil {
		m.cfg.Recorder.AnnotatedEventf(e.Pod, e.Annotations, v1.EventTypeWarning, Reason, "%s", e.Message)
	}
	m.log.V(3).Info("Evicting pod", "pod", podName(e.Pod), "podUID", e.Pod.UID, "message", e.Message)
	if err := m.cfg.Killer.KillPod(ctx, e); err != nil {
		m.log.Error(err, "Eviction manager: pod failed to evict", "pod", podName(e.Pod))
		return
	}
	m.log.Info("Eviction manager: pod is evicted successfully", "pod", podName(e.Pod))
}

func podName(p *v1.Pod) string { return p.Namespace + "/" + p.Name }

func podNames(ps []*v1.Pod) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = podName(p)
	}
	return out
}
