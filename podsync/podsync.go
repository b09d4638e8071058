package podsync

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/nodekit-dev/nodekit/cgroupmgr"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/podstatus"
	"github.com/nodekit-dev/nodekit/podworkers"
)

// RuntimeManager is the runtime manager's part used; *kuberuntime.Manager
// implements it.
type RuntimeManager interface {
	SyncPod(ctx context.Context, pod *v1.Pod, status *kc.PodStatus, opts kuberuntime.SyncOptions) *kuberuntime.SyncResult
	GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*kc.PodStatus, error)
	TerminatePod(ctx context.Context, pod *v1.Pod, gracePeriodOverride *int64) (*kc.PodStatus, error)
	KillPod(ctx context.Context, pod *v1.Pod, running *kc.Pod, gracePeriodOverride *int64) error
	GetPods(ctx context.Context, all bool) ([]*kc.Pod, error)
	CleanupPodLogs(ctx context.Context, active func(types.UID) bool) ([]types.UID, error)
}

// Cgroups gives pods their cgroups; *cgroupmgr.Manager implements it.
type Cgroups interface {
	EnsurePodCgroup(pod *v1.Pod) (cgroupmgr.CgroupName, error)
	Path(name cgroupmgr.CgroupName) string
	DestroyPodCgroup(pod *v1.Pod) error
	CleanupOrphans(active map[types.UID]bool) (cgroupmgr.CleanupResult, error)
}

// Volumes refreshes and tears down pods' volumes; *volume.Manager
// implements it (its Mounts set them up, through the runtime manager).
type Volumes interface {
	SetUpAll(pod *v1.Pod) error
	// TearDown needs only pod's UID (an orphaned directory has no spec).
	TearDown(pod *v1.Pod) error
	// PodUIDs are the pods with a directory, for the orphans' clean-up.
	PodUIDs() []types.UID
}

// Prober is the probe manager's part used; *prober.Manager implements it.
type Prober interface {
	kuberuntime.ProbeResults
	podstatus.Probes
	// StopLivenessAndStartup is called before a termination's kill,
	// RemovePod after it: readiness is probed while the pod stops.
	StopLivenessAndStartup(uid types.UID)
	RemovePod(uid types.UID)
}

// Cache is the status cache; *statuscache.Cache implements it.
type Cache interface {
	Set(uid types.UID, status *kc.PodStatus, err error, timestamp time.Time) bool
	Delete(uid types.UID)
}

// Mirrors keeps static pods' mirror pods in the API; *mirrorpod.Manager
// implements it.
type Mirrors interface {
	Sync(ctx context.Context, static *v1.Pod) error
	DeleteOrphans(ctx context.Context, static func(namespace, name string) bool) error
}

// Config wires a Syncer; Cgroups, Volumes and Mirrors may be nil.
type Config struct {
	Runtime  RuntimeManager
	Cgroups  Cgroups
	Volumes  Volumes
	Prober   Prober
	Cache    Cache
	Statuses *podstatus.Manager
	Reasons  *podstatus.ReasonCache
	// Mirrors, in cluster mode, gives each static pod its mirror pod.
	Mirrors Mirrors
	// Recorder, if set, gets a pod's FailedMount events.
	Recorder EventRecorder
	// RuntimeName prefixes container IDs in statuses ("containerd").
	RuntimeName string
	HostIPs     []string
	// Allocation, if set, makes pods resizable in place: each sync runs
	// the allocated pod and resizes its running containers to it, the
	// pod's cgroup set around them when Cgroups is a PodCgroupResizer.
	Allocation Allocation
	// UserNamespaces, if set, frees the user namespace of each pod
	// terminated (the kubelet's SyncTerminatedPod) and of pods gone at
	// housekeeping (package userns's *Manager).
	UserNamespaces UserNamespaces
	// Metrics, if set, observes the pods' start durations.
	Metrics *Metrics
	// Clock times the wait for pending volumes (see AttachAndMountTimeout)
	// and stamps statuses.
	Clock clock.Clock
	Log   logr.Logger
}

// UserNamespaces frees pods' user namespaces; package userns's *Manager
// implements it.
type UserNamespaces interface {
	Release(uid types.UID)
	CleanupOrphans(known []types.UID) error
}

// Syncer is the kubelet's SyncPod and SyncTerminatingPod over nodekit's
// packages: the podworkers.PodSyncer of a node agent.
type Syncer struct{ cfg Config }

// New returns a Syncer; Runtime, Prober, Cache, Statuses and Reasons are
// required.
func New(cfg Config) (*Syncer, error) {
	if cfg.Runtime == nil || cfg.Prober == nil || cfg.Cache == nil || cfg.Statuses == nil || cfg.Reasons == nil {
		return nil, errors.New("podsync: Runtime, Prober, Cache, Statuses and Reasons are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Syncer{cfg: cfg}, nil
}

var _ podworkers.PodSyncer = (*Syncer)(nil)

// Sync runs one Work of the pod workers.
//
// SyncPod: a pod whose status (generated from Work.Status over the one
// published before) is terminal gets ErrPodTerminal, as the kubelet's
// SyncPod returns isTerminal, and nothing of it is touched. Otherwise the
// pod's cgroup is ensured, the runtime manager syncs the pod
// (probe results restart containers), the start failures feed the reason
// cache, and the pod's API status is generated and published. After a
// sync that started or stopped something, the pod is read back from the
// runtime and its status cached at once, so the change is published now
// rather than after the next relist (the kubelet waits for it); the next
// sync takes that status (podworkers.StatusReadAt), and a PLEG whose
// listing agrees with it need not read the pod again. A failed step is an
// error: the workers retry after their back-off.
//
// TerminatePod: liveness and startup probes stop, the pod is killed
// (readiness probed until then; the kubelet's StopLivenessAndStartup) and
// removed from the runtime with its logs, then its volumes and cgroup go,
// and the caches forget it. For a RuntimeOnly pod (an orphan) there are no volumes or
// cgroup of a spec to remove; CleanupCgroups removes its cgroup. With
// KillOptions (an eviction) the containers get its grace period, and the
// final status, edited by its Status, stays published. A Finished one
// (the pod's phase is terminal) is only killed: see terminateFinished.
func (s *Syncer) Sync(ctx context.Context, w podworkers.Work) error {
	if w.Type == podworkers.TerminatePod {
		return s.terminate(ctx, w)
	}
	pod := s.allocated(w.Pod)
	if phase := s.generate(pod, w.Status, false).Phase; phase == v1.PodSucceeded || phase == v1.PodFailed {
		// The kubelet's SyncPod: a pod whose status is terminal is done;
		// its status is published, the runtime is not touched, and the
		// workers terminate it (see terminateFinished).
		s.publish(pod, w.Status, nil, false)
		return fmt.Errorf("pod %s is %s: %w", podName(pod), phase, podworkers.ErrPodTerminal)
	}
	if s.cfg.Mirrors != nil && isStatic(pod) {
		// As the kubelet: a mirror pod that cannot be written does not
		// stop the static pod from running.
		if err := s.cfg.Mirrors.Sync(ctx, pod); err != nil {
			s.cfg.Log.Error(err, "mirror pod", "pod", podName(pod))
		}
	}
	if err := s.setUpVolumes(ctx, pod, w.Status); err != nil {
		s.publish(pod, w.Status, nil, false)
		return err
	}
	resized := s.resizing(pod, w.Status)
	var parent string
	if s.cfg.Cgroups != nil {
		var err error
		if parent, err = s.podCgroup(pod, resized); err != nil {
			return fmt.Errorf("pod %s cgroup: %w", podName(pod), err)
		}
	}
	opts := kuberuntime.SyncOptions{Probes: s.cfg.Prober, CgroupParent: parent}
	if s.cfg.Allocation != nil {
		opts.Resize = s.cfg.Allocation
	}
	res := s.cfg.Runtime.SyncPod(ctx, pod, w.Status, opts)
	for _, step := range res.Steps {
		if step.Err != nil && !errors.Is(step.Err, kuberuntime.ErrCrashLoopBackOff) {
			s.cfg.Log.Info("sync step failed", "pod", podName(pod), "action", step.Action, "target", step.Target,
				"reason", step.Reason(), "message", step.Message)
		}
	}
	s.cfg.Reasons.Update(pod.UID, res)
	status := w.Status
	if changed(res) {
		at := s.cfg.Clock.Now()
		if st, err := s.cfg.Runtime.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace); err == nil {
			s.cfg.Cache.Set(pod.UID, st, nil, at)
			podworkers.StatusReadAt(ctx, at)
			status = st
		}
	}
	s.resizeDone(pod, status, res, resized)
	s.publish(pod, status, nil, false)
	return res.Err()
}

// publish generates the pod's status from st and hands it to the status
// manager, edited by edit if set (an eviction's final status); terminal:
// see generate. It returns the phase published.
func (s *Syncer) publish(pod *v1.Pod, st *kc.PodStatus, edit func(*v1.PodStatus), terminal bool) v1.PodPhase {
	status := s.generate(pod, st, terminal)
	if edit != nil {
		edit(&status)
	}
	if terminal {
		held, ok := s.cfg.Statuses.PodStatus(pod.UID)
		if !ok {
			held = pod.Status
		}
		if podstatus.CheckContainerStateTransition(pod, &held, &status) != nil {
			// The kubelet's: the status manager refuses the generated
			// status (a container the runtime no longer has comes out
			// waiting), and its TerminatePod finishes the one it holds
			// (else the pod's own).
			status = *held.DeepCopy()
			if edit != nil {
				edit(&status)
			}
		}
		podstatus.Terminate(pod, &status) // the kubelet's TerminatePod: a deleted pod can go from the API
	}
	if s.cfg.Metrics != nil {
		prev, had := s.cfg.Statuses.PodStatus(pod.UID)
		s.cfg.Metrics.podStatusPublished(pod, prev, had, status.Phase, s.cfg.Clock.Now())
	}
	if s.cfg.Statuses.SetPodStatus(pod, status) {
		s.cfg.Log.Info("pod status", "pod", podName(pod), "phase", status.Phase, "containers", podstatus.Summarize(status))
	}
	return status.Phase
}

// generate is the pod's API status from st over the status published
// before (a terminal phase, a stopped pod's IPs stay); terminal says the
// pod is being terminated for good (podstatus.Input.Terminal).
func (s *Syncer) generate(pod *v1.Pod, st *kc.PodStatus, terminal bool) v1.PodStatus {
	in := podstatus.Input{Pod: pod, Runtime: st, Reasons: s.cfg.Reasons.Get(pod.UID),
		Probes: s.cfg.Prober, RuntimeName: s.cfg.RuntimeName, HostIPs: s.cfg.HostIPs, Terminal: terminal}
	if old, ok := s.cfg.Statuses.PodStatus(pod.UID); ok {
		in.Old = &old
	}
	if s.cfg.Allocation != nil {
		in.Actuated = func(name string) (v1.ResourceRequirements, bool) { return s.cfg.Allocation.Actuated(pod.UID, name) }
	}
	status := podstatus.Generate(in)
	if s.cfg.Allocation != nil {
		status.Conditions = append(status.Conditions, s.cfg.Allocation.Conditions(pod.UID)...)
	}
	start := pod.Status.StartTime // the status manager sets it when first published
	if in.Old != nil {
		start = in.Old.StartTime
	}
	if s.pastDeadlineSince(pod, start) {
		deadlineExceeded(&status) // then terminated as any pod whose phase became terminal
	}
	return status
}

// changed says whether a sync started or stopped anything.
func changed(res *kuberuntime.SyncResult) bool {
	for _, step := range res.Steps {
		if step.Err == nil {
			return true
		}
	}
	return false
}

func (s *Syncer) terminate(ctx context.Context, w podworkers.Work) error {
	pod := w.Pod
	s.cfg.Prober.StopLivenessAndStartup(pod.UID)
	// The workers' effective grace period (the kubelet's
	// calculateEffectiveGracePeriod), as the kubelet always passes it to
	// killPod; none for an orphan: its containers' own.
	var grace *int64
	if w.GracePeriod > 0 {
		grace = &w.GracePeriod
	} else if w.KillOptions != nil {
		grace = w.KillOptions.GracePeriodSecondsOverride
	}
	switch {
	case w.Finished:
		return s.terminateKept(ctx, pod, nil, nil)
	case w.KillOptions != nil:
		// Evicted: killed, its containers kept for kubectl logs until the
		// pod is removed, with its final status (Failed, Evicted).
		return s.terminateKept(ctx, pod, grace, w.KillOptions.Status)
	}
	final, err := s.cfg.Runtime.TerminatePod(ctx, pod, grace)
	if err != nil {
		s.cfg.Log.Error(err, "terminating pod", "pod", podName(pod))
		return err
	}
	s.cfg.Prober.RemovePod(pod.UID)
	if !w.RuntimeOnly && s.cfg.Volumes != nil {
		if err := s.cfg.Volumes.TearDown(pod); err != nil {
			s.cfg.Log.Error(err, "terminating pod: volumes", "pod", podName(pod))
			return fmt.Errorf("pod %s volumes: %w", podName(pod), err)
		}
	}
	if !w.RuntimeOnly && s.cfg.Cgroups != nil {
		if err := s.cfg.Cgroups.DestroyPodCgroup(pod); err != nil {
			// Retried after the workers' back-off; said at error level, as
			// the runtime's refusals are, so that a pod that cannot end shows.
			s.cfg.Log.Error(err, "terminating pod: cgroup", "pod", podName(pod))
			return fmt.Errorf("pod %s cgroup: %w", podName(pod), err)
		}
	}
	if s.cfg.UserNamespaces != nil {
		s.cfg.UserNamespaces.Release(pod.UID)
	}
	s.cfg.Cache.Delete(pod.UID)
	switch {
	case isAPIPod(pod) && !w.RuntimeOnly:
		// The status manager writes the final status (the containers as
		// killed), then deletes the API object; the caller calls
		// Statuses.RemovePod once the API source says the pod is gone.
		s.publish(pod, final, nil, true)
	default:
		s.cfg.Statuses.RemovePod(pod.UID)
	}
	s.cfg.Reasons.Remove(pod.UID)
	if w.RuntimeOnly {
		s.cfg.Log.Info("orphaned pod killed and removed", "pod", podName(pod), "uid", pod.UID)
	} else {
		s.cfg.Log.Info("pod terminated and removed", "pod", podName(pod))
	}
	return nil
}

// Orphans are the kills for the runtime's pods that known (the workers'
// pods, terminating ones included) does not have: the kubelet's
// HandlePodCleanups. Call it only once every pod source has delivered, so
// that a pod not yet re-read after a restart is not taken for an orphan.
func (s *Syncer) Orphans(ctx context.Context, known map[types.UID]bool) ([]podworkers.Update, error) {
	kills, _, err := s.orphans(ctx, known)
	return kills, err
}

// orphans is Orphans, and the UIDs of every pod the runtime has.
func (s *Syncer) orphans(ctx context.Context, known map[types.UID]bool) ([]podworkers.Update, map[types.UID]bool, error) {
	pods, err := s.cfg.Runtime.GetPods(ctx, true)
	if err != nil {
		return nil, nil, fmt.Errorf("listing pods for orphan clean-up: %w", err)
	}
	var out []podworkers.Update
	inRuntime := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		inRuntime[p.ID] = true
		if !known[p.ID] {
			s.cfg.Log.Info("killing orphaned pod: no source has it", "pod", p.Namespace+"/"+p.Name, "uid", p.ID)
			out = append(out, podworkers.Update{Type: podworkers.SyncPodKill, RuntimeOnly: true,
				Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.ID}}})
		}
	}
	return out, inRuntime, nil
}

// CleanupPodDirs tears down the volumes and directory of every pod that
// neither known nor the runtime (inRuntime) has: the kubelet's
// cleanupOrphanedPodDirs. A pod killed as an orphan, or one whose
// termination was cut short by an agent crash after its containers went,
// leaves its directory otherwise.
func (s *Syncer) CleanupPodDirs(known, inRuntime map[types.UID]bool) error {
	if s.cfg.Volumes == nil {
		return nil
	}
	var errs []error
	for _, uid := range s.cfg.Volumes.PodUIDs() {
		if known[uid] || inRuntime[uid] {
			continue
		}
		if err := s.cfg.Volumes.TearDown(&v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}}); err != nil {
			errs = append(errs, fmt.Errorf("orphaned pod directory %s: %w", uid, err))
			continue
		}
		s.cfg.Log.Info("removed the directory of an orphaned pod", "uid", uid)
	}
	return errors.Join(errs...)
}

// Workers is what Housekeeping needs of the pod workers;
// *podworkers.Workers implements it.
type Workers interface {
	Known() map[types.UID]bool
	Pods() []*v1.Pod
	UpdatePod(u podworkers.Update)
}

// Housekeeping asks for a sync of each pod past its active deadline,
// hands the workers a kill for each orphan (see Orphans),
// removes the directories (CleanupPodDirs) and cgroups (CleanupCgroups) of
// pods that are gone, and the
// mirror pods whose static pod is gone: the
// kubelet's HandlePodCleanups, for every housekeeping period once every
// pod source has delivered.
func (s *Syncer) Housekeeping(ctx context.Context, w Workers) error {
	for _, p := range w.Pods() {
		if s.pastActiveDeadline(p) {
			// The kubelet's sync loop asks its active deadline handler
			// (ShouldSync): the pod is synced, and fails, at once.
			w.UpdatePod(podworkers.Update{Type: podworkers.SyncPodSync, Pod: p})
		}
	}
	known := w.Known()
	kills, inRuntime, err := s.orphans(ctx, known)
	for _, u := range kills {
		w.UpdatePod(u)
	}
	if err == nil { // else any pod could still run
		err = errors.Join(s.CleanupPodDirs(known, inRuntime), s.cleanupUserNamespaces(known, inRuntime))
	}
	var mirrorErr error
	if s.cfg.Mirrors != nil {
		static := map[string]bool{}
		for _, p := range w.Pods() {
			if isStatic(p) {
				static[p.Namespace+"/"+p.Name] = true
			}
		}
		mirrorErr = s.cfg.Mirrors.DeleteOrphans(ctx, func(ns, name string) bool { return static[ns+"/"+name] })
	}
	s.retryResizes(w)
	return errors.Join(err, s.CleanupCgroups(known), mirrorErr)
}

func isAPIPod(p *v1.Pod) bool { return p.Annotations["kubernetes.io/config.source"] == "api" }

// isStatic: a pod from a file or URL source, not from the API server (the
// kubelet's kubernetes.io/config.source annotation).
func isStatic(p *v1.Pod) bool {
	src, ok := p.Annotations["kubernetes.io/config.source"]
	return ok && src != "api"
}

// cleanupUserNamespaces frees the user namespaces of the pods neither the
// workers nor the runtime have, as the kubelet's HandlePodCleanups.
func (s *Syncer) cleanupUserNamespaces(known, inRuntime map[types.UID]bool) error {
	if s.cfg.UserNamespaces == nil {
		return nil
	}
	keep := make([]types.UID, 0, len(known)+len(inRuntime))
	for _, m := range []map[types.UID]bool{known, inRuntime} {
		for uid, ok := range m {
			if ok {
				keep = append(keep, uid)
			}
		}
	}
	return s.cfg.UserNamespaces.CleanupOrphans(keep)
}

// CleanupCgroups removes the pod cgroups of pods known does not have (a
// cgroup with processes left is reported, not removed), and CleanupLogs
// their log directories (the log half of the kubelet's container GC).
func (s *Syncer) CleanupCgroups(known map[types.UID]bool) error {
	if s.cfg.Cgroups == nil {
		return nil
	}
	_, err := s.cfg.Cgroups.CleanupOrphans(known)
	return err
}

// CleanupLogs: see CleanupCgroups.
func (s *Syncer) CleanupLogs(ctx context.Context, known map[types.UID]bool) error {
	removed, err := s.cfg.Runtime.CleanupPodLogs(ctx, func(uid types.UID) bool { return known[uid] })
	if len(removed) > 0 {
		s.cfg.Log.Info("removed the logs of removed pods", "uids", removed)
	}
	return err
}

func podName(p *v1.Pod) string { return p.Namespace + "/" + p.Name }
