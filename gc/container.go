package gc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/nodekit-dev/nodekit/containerlog"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/podpath"
	"github.com/nodekit-dev/nodekit/runtime/criconv"
)

// ContainerConfig configures a ContainerGC. Runtime is required; zero
// fields take the kubelet's defaults.
type ContainerConfig struct {
	Runtime RuntimeService
	// Policy is the kubelet's container GC policy (nil:
	// DefaultContainerPolicy()).
	Policy *ContainerPolicy
	// Period is how often Run collects (default 1m).
	Period time.Duration
	// PodState says which pods are gone; nil: none is, and only the
	// policy's limits remove anything.
	PodState PodStateProvider
	// AllSourcesReady reports whether every pod source has delivered its
	// pods. Until it does, no pod is taken for gone, as in the kubelet: a
	// pod not yet re-read after a restart is not deleted. nil: always
	// ready.
	AllSourcesReady func() bool
	// SandboxSelector restricts the GC to the sandboxes carrying all
	// these labels and to the containers in them, so that an agent
	// sharing a runtime touches only its own pods (kuberuntime.ManagerConfig's
	// SandboxLabels with OwnPodsOnly). The kubelet owns its runtime and
	// has none.
	SandboxSelector map[string]string
	// PodLogsDir is the root of the pod log directories
	// (<namespace>_<name>_<uid>, package podpath; default /var/log/pods):
	// a removed container's log file goes with it, a gone pod's directory
	// with its last sandbox.
	PodLogsDir string
	// ContainersLogDir is where the kubelet's /var/log/containers links
	// are (package containerlog): a removed container's goes with it, and
	// each pass removes the links of containers gone or exited (with a
	// Runtime that is also a ContainerStatusReader). "": none.
	ContainersLogDir string
	// Recorder, with NodeName, records ContainerGCFailed on the Node when
	// a Run pass fails; nil: no events.
	Recorder EventRecorder
	NodeName string
	// OnCollect, if set, is called after each of Run's passes (for
	// metrics, or a test).
	OnCollect func(ContainerResult, error)
	Clock     clock.WithTicker
	Log       logr.Logger
}

// ContainerResult is what a container GC pass removed.
type ContainerResult struct {
	Containers []ContainerInfo
	Sandboxes  []SandboxInfo
	// PodLogs are the pods whose log directories were removed.
	PodLogs []types.UID
}

// ContainerGC is the kubelet's container garbage collector: dead
// containers, inactive sandboxes and the logs of gone pods.
//
// SelectContainers picks the dead (not running) containers older than
// MinAge: all of a gone pod's, then all but the newest MaxPerPodContainer
// (1) per pod and container name, then, over MaxContainers (-1: no limit),
// an equal share per container and the oldest beyond it. SelectSandboxes
// picks the sandboxes that are neither ready nor hold a container: all of a
// gone pod's, all but the newest of a live pod's. SelectPodLogDirs picks the
// log directories (package podpath's <namespace>_<name>_<uid>) of gone pods
// the runtime has no sandbox of. Only containers and sandboxes with the
// kubelet's io.kubernetes.pod.* labels are considered, and with a
// SandboxSelector only the sandboxes carrying those labels and the
// containers in them. Which pods are gone, a PodStateProvider says (the
// kubelet's pod workers), and only once AllSourcesReady.
//
// Deviations from the kubelet:
//
//   - Containers and sandboxes without the kubelet's pod UID label are
//     never touched (the kubelet takes them for a gone pod's).
//   - A removed container's log file is found from its labels through
//     podpath (the kubelet asks the runtime for its LogPath, the same
//     file), and is kept if another container of the pod, not removed,
//     writes to it.
//   - A pod's log directory is kept while the runtime has a sandbox of
//     that pod, whoever's, so that agents sharing a runtime and a logs
//     directory do not remove each other's.
type ContainerGC struct {
	cfg    ContainerConfig
	policy ContainerPolicy
	mu     sync.Mutex // one pass at a time
}

// NewContainerGC checks cfg and fills in the kubelet's defaults.
func NewContainerGC(cfg ContainerConfig) (*ContainerGC, error) {
	if cfg.Runtime == nil {
		return nil, errors.New("gc: ContainerConfig.Runtime: Required value")
	}
	policy := DefaultContainerPolicy()
	if cfg.Policy != nil {
		policy = *cfg.Policy
	}
	if policy.MinAge < 0 {
		return nil, fmt.Errorf("gc: ContainerConfig.Policy.MinAge: Invalid value: %v: must not be negative", policy.MinAge)
	}
	if cfg.Period < 0 {
		return nil, fmt.Errorf("gc: ContainerConfig.Period: Invalid value: %v: must not be negative", cfg.Period)
	}
	if cfg.Period == 0 {
		cfg.Period = DefaultContainerGCPeriod
	}
	for k, v := range cfg.SandboxSelector {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, fmt.Errorf("gc: ContainerConfig.SandboxSelector: Invalid value: %q: %s", k, errs[0])
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return nil, fmt.Errorf("gc: ContainerConfig.SandboxSelector[%s]: Invalid value: %q: %s", k, v, errs[0])
		}
	}
	if cfg.PodLogsDir == "" {
		cfg.PodLogsDir = podpath.DefaultPodLogsDir
	}
	if !filepath.IsAbs(cfg.PodLogsDir) {
		return nil, fmt.Errorf("gc: ContainerConfig.PodLogsDir: Invalid value: %q: must be an absolute path", cfg.PodLogsDir)
	}
	cfg.PodLogsDir = filepath.Clean(cfg.PodLogsDir)
	if cfg.Recorder != nil && cfg.NodeName == "" {
		return nil, errors.New("gc: ContainerConfig.NodeName: Required value: the Recorder records events on the Node")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &ContainerGC{cfg: cfg, policy: policy}, nil
}

// Policy returns the policy in force.
func (g *ContainerGC) Policy() ContainerPolicy { return g.policy }

// GarbageCollect runs one pass of the kubelet's container GC: the dead
// containers SelectContainers picks (an unknown-state one is stopped
// first), with their log files; then the sandboxes SelectSandboxes picks
// among what is left; then the log directories of gone pods. A failure to
// remove one object does not stop the others; the error joins them all.
func (g *ContainerGC) GarbageCollect(ctx context.Context) (ContainerResult, error) {
	return g.collect(ctx, false)
}

// DeleteAllUnusedContainers is the pass the kubelet's eviction manager runs
// under disk pressure: also the dead containers and sandboxes of pods that
// are terminated but not deleted (ShouldPodRuntimeBeRemoved) go whole.
func (g *ContainerGC) DeleteAllUnusedContainers(ctx context.Context) (ContainerResult, error) {
	return g.collect(ctx, true)
}

// Run collects every Period, the first time at once, until ctx ends; a
// failed pass is logged and recorded as a ContainerGCFailed event, as the
// kubelet does. It returns nil when ctx ends.
func (g *ContainerGC) Run(ctx context.Context) error {
	t := g.cfg.Clock.NewTicker(g.cfg.Period)
	defer t.Stop()
	failed := false
	for {
		res, err := g.GarbageCollect(ctx)
		switch {
		case ctx.Err() != nil:
		case err != nil:
			g.cfg.Log.Error(err, "container garbage collection failed")
			event(g.cfg.Recorder, g.cfg.NodeName, ReasonContainerGCFailed, err.Error())
			failed = true
		default:
			level := 4
			if failed {
				level, failed = 1, false
			}
			g.cfg.Log.V(level).Info("container garbage collection succeeded", "containers", len(res.Containers),
				"sandboxes", len(res.Sandboxes), "podLogs", len(res.PodLogs))
		}
		if g.cfg.OnCollect != nil && ctx.Err() == nil {
			g.cfg.OnCollect(res, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// listed is one listing of the runtime, converted.
type listed struct {
	sandboxes  []SandboxInfo                    // ours, with the kubelet's labels
	containers []ContainerInfo                  // ours, with the kubelet's labels
	occupants  []ContainerInfo                  // every container in a sandbox of ours, labelled or not
	raw        map[string]*runtimeapi.Container // ours, by ID
	inRuntime  map[types.UID]int                // sandboxes per pod, anyone's
}

func (g *ContainerGC) list(ctx context.Context) (*listed, error) {
	// Unfiltered: whether a pod still has a sandbox is asked of all of
	// them, and a selector is applied here (containerd 1.6 filters
	// sandboxes by label, but not containers by sandbox set).
	sbs, err := g.cfg.Runtime.ListPodSandbox(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("listing sandboxes: %w", err)
	}
	ctrs, err := g.cfg.Runtime.ListContainers(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	l := &listed{raw: make(map[string]*runtimeapi.Container, len(ctrs)), inRuntime: make(map[types.UID]int, len(sbs))}
	ours := make(map[string]bool, len(sbs))
	for _, s := range sbs {
		uid := types.UID(s.Labels[kc.LabelPodUID])
		if uid == "" {
			uid = types.UID(s.GetMetadata().GetUid())
		}
		if uid != "" {
			l.inRuntime[uid]++
		}
		if s.Labels[kc.LabelPodUID] == "" || !matches(g.cfg.SandboxSelector, s.Labels) {
			continue
		}
		ours[s.Id] = true
		l.sandboxes = append(l.sandboxes, SandboxInfo{ID: s.Id, PodUID: uid,
			Ready: s.State == runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: time.Unix(0, s.CreatedAt)})
	}
	for _, c := range ctrs {
		if len(g.cfg.SandboxSelector) > 0 && !ours[c.PodSandboxId] {
			continue
		}
		ct := ContainerInfo{ID: c.Id, PodUID: types.UID(c.Labels[kc.LabelPodUID]), Name: c.GetMetadata().GetName(),
			SandboxID: c.PodSandboxId, State: criconv.ContainerStateFromCRI(c.State), CreatedAt: time.Unix(0, c.CreatedAt)}
		if ct.Name == "" {
			ct.Name = c.Labels[kc.LabelContainerName]
		}
		l.occupants = append(l.occupants, ct)
		if ct.PodUID == "" || ct.Name == "" {
			continue
		}
		l.containers = append(l.containers, ct)
		l.raw[c.Id] = c
	}
	return l, nil
}

func (g *ContainerGC) collect(ctx context.Context, evictNonDeleted bool) (ContainerResult, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var res ContainerResult
	l, err := g.list(ctx)
	if err != nil {
		return res, err
	}
	now := g.cfg.Clock.Now()
	content, runtimeGone := g.podState()
	removable := content
	if evictNonDeleted && runtimeGone != nil {
		removable = func(uid types.UID) bool { return content(uid) || runtimeGone(uid) }
	}
	var errs []error

	removed := map[string]bool{}
	logs := g.logRoot()
	if logs != nil {
		defer logs.Close()
	}
	victims := SelectContainers(g.policy, now, l.containers, removable)
	// The victims' log files, but for one another container still writes
	// to (a restart count can repeat when a pod's history was lost).
	var logFiles map[string]string
	if logs != nil && len(victims) > 0 {
		logFiles = make(map[string]string, len(victims))
		for _, c := range victims {
			logFiles[c.ID] = ""
		}
		keep := map[string]bool{}
		for _, c := range l.containers {
			rel, ok := logFile(l.raw[c.ID], c)
			if _, doomed := logFiles[c.ID]; doomed && ok {
				logFiles[c.ID] = rel
			} else if ok {
				keep[rel] = true
			}
		}
		for id, rel := range logFiles {
			if keep[rel] {
				logFiles[id] = ""
			}
		}
	}
	for _, c := range victims {
		if err := g.removeContainer(ctx, l.raw[c.ID], c, logFiles[c.ID]); err != nil {
			errs = append(errs, err)
			continue
		}
		removed[c.ID] = true
		res.Containers = append(res.Containers, c)
	}
	left := l.occupants[:0:0]
	for _, c := range l.occupants {
		if !removed[c.ID] {
			left = append(left, c)
		}
	}
	for _, s := range SelectSandboxes(l.sandboxes, left, removable) {
		g.cfg.Log.V(4).Info("removing sandbox", "sandboxID", s.ID, "podUID", s.PodUID)
		// Normally stopped already; stopping first guards against the
		// rare case where it is not, as the kubelet does.
		if err := g.cfg.Runtime.StopPodSandbox(ctx, s.ID); err != nil {
			errs = append(errs, fmt.Errorf("stopping sandbox %s of pod %s before removal: %w", s.ID, s.PodUID, err))
			continue
		}
		if err := g.cfg.Runtime.RemovePodSandbox(ctx, s.ID); err != nil {
			errs = append(errs, fmt.Errorf("removing sandbox %s of pod %s: %w", s.ID, s.PodUID, err))
			continue
		}
		res.Sandboxes = append(res.Sandboxes, s)
		l.inRuntime[s.PodUID]--
	}
	inRuntime := make(map[types.UID]bool, len(l.inRuntime))
	for uid, n := range l.inRuntime {
		inRuntime[uid] = n > 0
	}
	uids, err := g.removePodLogs(inRuntime, content)
	res.PodLogs = uids
	if err != nil {
		errs = append(errs, err)
	}
	if sr, ok := g.cfg.Runtime.(ContainerStatusReader); ok && g.cfg.ContainersLogDir != "" {
		if _, err := containerlog.RemoveDeadSymlinks(ctx, g.cfg.ContainersLogDir, sr); err != nil {
			errs = append(errs, err)
		}
	}
	return res, errors.Join(errs...)
}

// podState returns the pass's memoised answers of PodState: nil when no
// pod may be taken for gone (no PodState, or not all sources ready).
func (g *ContainerGC) podState() (content, runtimeGone func(types.UID) bool) {
	ps := g.cfg.PodState
	if ps == nil || (g.cfg.AllSourcesReady != nil && !g.cfg.AllSourcesReady()) {
		return nil, nil
	}
	return memo(ps.ShouldPodContentBeRemoved), memo(ps.ShouldPodRuntimeBeRemoved)
}

func memo(f func(types.UID) bool) func(types.UID) bool {
	seen := map[types.UID]bool{}
	return func(uid types.UID) bool {
		v, ok := seen[uid]
		if !ok {
			v = f(uid)
			seen[uid] = v
		}
		return v
	}
}

// removeContainer is the kubelet's removeContainer: an unknown-state
// container may still run and is stopped first; its log file (logFile,
// relative to PodLogsDir, with its rotated files; "" for none) and its
// /var/log/containers link are removed, then the container.
func (g *ContainerGC) removeContainer(ctx context.Context, raw *runtimeapi.Container, c ContainerInfo, logFile string) error {
	g.cfg.Log.V(4).Info("removing container", "containerID", c.ID, "podUID", c.PodUID, "container", c.Name)
	if c.State == kc.ContainerStateUnknown {
		grace := int64(v1.DefaultTerminationGracePeriodSeconds)
		if li := kc.ReadLabels(raw.Labels, raw.Annotations); li.GracePeriod != nil {
			grace = *li.GracePeriod
		}
		if err := g.cfg.Runtime.StopContainer(ctx, c.ID, grace); err != nil {
			return fmt.Errorf("stopping container %s (%s of pod %s), in unknown state, before removal: %w", c.ID, c.Name, c.PodUID, err)
		}
	}
	if logFile != "" {
		// The log and its rotated files (containerlog's), as the kubelet's
		// removeContainerLog.
		if err := containerlog.RemoveLogs(filepath.Join(g.cfg.PodLogsDir, logFile)); err != nil {
			g.cfg.Log.Error(err, "removing a removed container's log", "path", filepath.Join(g.cfg.PodLogsDir, logFile))
		}
	}
	if g.cfg.ContainersLogDir != "" {
		li := kc.ReadLabels(raw.Labels, raw.Annotations)
		ref := containerlog.ContainerRef{PodName: li.PodName, PodNamespace: li.PodNamespace, ContainerName: c.Name, ContainerID: c.ID}
		if err := containerlog.RemoveSymlink(g.cfg.ContainersLogDir, ref); err != nil {
			g.cfg.Log.Error(err, "removing a removed container's log link")
		}
	}
	if err := g.cfg.Runtime.RemoveContainer(ctx, c.ID); err != nil {
		return fmt.Errorf("removing container %s (%s of pod %s): %w", c.ID, c.Name, c.PodUID, err)
	}
	return nil
}

// logFile is the container instance's log file relative to PodLogsDir,
// <namespace>_<name>_<uid>/<container>/<restart>.log as podpath lays it
// out from the kubelet's labels (the kubelet removes the runtime's
// LogPath, which is the same file); ok is false when the labels do not
// make such a path.
func logFile(raw *runtimeapi.Container, c ContainerInfo) (rel string, ok bool) {
	li := kc.ReadLabels(raw.Labels, raw.Annotations)
	dir, err := podpath.PodLogsDirName(li.PodNamespace, li.PodName, c.PodUID)
	if err != nil {
		return "", false
	}
	file, err := podpath.ContainerLogPath(c.Name, li.RestartCount)
	if err != nil {
		return "", false
	}
	return filepath.Join(dir, file), true
}

// logRoot opens PodLogsDir; nil when it does not exist (nothing to remove).
func (g *ContainerGC) logRoot() *os.Root {
	root, err := os.OpenRoot(g.cfg.PodLogsDir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			g.cfg.Log.Error(err, "opening the pod logs directory", "path", g.cfg.PodLogsDir)
		}
		return nil
	}
	return root
}

// removePodLogs removes what SelectPodLogDirs picks, through podpath.
func (g *ContainerGC) removePodLogs(inRuntime map[types.UID]bool, removable func(types.UID) bool) ([]types.UID, error) {
	if removable == nil {
		return nil, nil
	}
	entries, err := os.ReadDir(g.cfg.PodLogsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the pod logs directory: %w", err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	var out []types.UID
	var errs []error
	for _, d := range SelectPodLogDirs(names, inRuntime, removable) {
		_, _, uid, _ := podpath.ParsePodLogsDirName(d)
		g.cfg.Log.V(4).Info("removing pod logs", "podUID", uid)
		if err := podpath.RemoveAllIn(g.cfg.PodLogsDir, d); err != nil {
			errs = append(errs, fmt.Errorf("removing pod logs %s: %w", d, err))
			continue
		}
		out = append(out, uid)
	}
	return out, errors.Join(errs...)
}

func matches(sel, labels map[string]string) bool {
	for k, v := range sel {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}
