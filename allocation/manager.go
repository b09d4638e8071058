package allocation

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// FitFunc says whether pod, with the resources its spec asks, fits the
// node beside others (the other active pods, as allocated); when it does
// not, reason and message say why. admission's (*Predicate).FitResize
// is one.
type FitFunc func(pod *v1.Pod, others []*v1.Pod) (fit bool, reason, message string)

// EventRecorder records the resize events; *events.Recorder (as
// client-go's record.EventRecorder) implements it.
type EventRecorder interface {
	Eventf(object apiruntime.Object, eventtype, reason, messageFmt string, args ...any)
}

// The kubelet's resize event reasons (pkg/kubelet/events).
const (
	EventResizeDeferred   = "ResizeDeferred"
	EventResizeInfeasible = "ResizeInfeasible"
	EventResizeStarted    = "ResizeStarted"
	EventResizeCompleted  = "ResizeCompleted"
	EventResizeError      = "ResizeError"
)

// Config configures a Manager.
type Config struct {
	// StateDir holds the checkpoints (the kubelet's root dir); "" keeps
	// them in memory, for tests and hollow nodes.
	StateDir string
	// Fit decides whether a resize fits; required.
	Fit FitFunc
	// Recorder, if set, gets the resize events.
	Recorder EventRecorder
	Clock    clock.PassiveClock
	Log      logr.Logger
}

// resizeConditions are a pod's PodResizePending and PodResizeInProgress.
type resizeConditions struct {
	pending, inProgress *v1.PodCondition
}

// Manager is the node's allocation manager; safe for concurrent use.
type Manager struct {
	cfg                 Config
	mu                  sync.Mutex
	allocated, actuated *store
	conditions          map[types.UID]resizeConditions
	pending             []types.UID // deferred resizes, oldest first
}

// New reads the checkpoints in cfg.StateDir. One that cannot be read is
// logged and the Manager starts without it, as the kubelet does: the
// running pods are then taken as allocated and actuated as their specs
// say.
func New(cfg Config) (*Manager, error) {
	if cfg.Fit == nil {
		return nil, errors.New("allocation: Config.Fit is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	m := &Manager{cfg: cfg, conditions: map[types.UID]resizeConditions{}}
	if cfg.StateDir != "" {
		if err := os.MkdirAll(cfg.StateDir, 0o750); err != nil {
			return nil, fmt.Errorf("allocation: Config.StateDir: %w", err)
		}
	}
	var err error
	for path, s := range map[string]**store{AllocatedStateFile: &m.allocated, ActuatedStateFile: &m.actuated} {
		if cfg.StateDir != "" {
			path = cfg.StateDir + "/" + path
		} else {
			path = ""
		}
		if *s, err = openStore(path); err != nil {
			cfg.Log.Error(err, "allocation checkpoint")
		}
	}
	return m, nil
}

// AddPod records pod's resources as allocated, unless a checkpoint already
// has them (the agent restarted: the checkpoint is the truth), and returns
// the pod as allocated. Call it when the pod is admitted.
func (m *Manager) AddPod(pod *v1.Pod) *v1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.allocated.has(pod.UID) {
		if err := m.allocated.setPod(pod.UID, specResources(pod)); err != nil {
			m.cfg.Log.Error(err, "allocation checkpoint", "pod", klogName(pod))
		}
	}
	allocated, _ := m.allocatedPod(pod)
	return allocated
}

// AllocatedPod is pod with each container's resources as allocated (a
// copy; pod itself when they are its spec's); differs says the spec asks
// for others, a resize not (yet) allocated. A pod never added is its spec.
func (m *Manager) AllocatedPod(pod *v1.Pod) (allocated *v1.Pod, differs bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.allocatedPod(pod)
}

func (m *Manager) allocatedPod(pod *v1.Pod) (*v1.Pod, bool) {
	if !m.allocated.has(pod.UID) {
		return pod, false
	}
	var out *v1.Pod
	for i, c := range allContainers(pod) {
		r, ok := m.allocated.get(pod.UID, c.Name)
		if !ok || apiequality.Semantic.DeepEqual(r, c.Resources) {
			continue
		}
		if out == nil {
			out = pod.DeepCopy()
		}
		containerAt(out, i).Resources = *r.DeepCopy()
	}
	if out == nil {
		return pod, false
	}
	return out, true
}

// Actuated is what the runtime was last told to give the container
// (kuberuntime records it as it starts or resizes containers).
func (m *Manager) Actuated(uid types.UID, container string) (v1.ResourceRequirements, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.actuated.get(uid, container)
}

// SetActuated records r as given to the container.
func (m *Manager) SetActuated(uid types.UID, container string, r v1.ResourceRequirements) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.actuated.setContainer(uid, container, r)
}

// RemovePod forgets a pod that is gone (terminated and removed).
func (m *Manager) RemovePod(uid types.UID) {
	m.RemoveOrphans(func(u types.UID) bool { return u != uid })
}

// RemoveOrphans forgets every pod keep does not keep.
func (m *Manager) RemoveOrphans(keep func(types.UID) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range []*store{m.allocated, m.actuated} {
		if err := s.remove(keep); err != nil {
			m.cfg.Log.Error(err, "allocation checkpoint")
		}
	}
	for uid := range m.conditions {
		if !keep(uid) {
			delete(m.conditions, uid)
		}
	}
	m.pending = deleteUIDs(m.pending, func(u types.UID) bool { return !keep(u) })
}

func deleteUIDs(uids []types.UID, drop func(types.UID) bool) []types.UID {
	out := uids[:0]
	for _, u := range uids {
		if !drop(u) {
			out = append(out, u)
		}
	}
	return out
}

// specResources are the resources pod's spec gives its containers.
func specResources(pod *v1.Pod) podResources {
	out := podResources{}
	for _, c := range allContainers(pod) {
		out[c.Name] = *c.Resources.DeepCopy()
	}
	return out
}

// allContainers are the init containers, then the containers (the
// resizable ones; ephemeral containers have no resources).
func allContainers(pod *v1.Pod) []*v1.Container {
	out := make([]*v1.Container, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for i := range pod.Spec.InitContainers {
		out = append(out, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

// containerAt is allContainers(pod)[i].
func containerAt(pod *v1.Pod, i int) *v1.Container {
	if i < len(pod.Spec.InitContainers) {
		return &pod.Spec.InitContainers[i]
	}
	return &pod.Spec.Containers[i-len(pod.Spec.InitContainers)]
}

func klogName(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }

func (m *Manager) now() metav1.Time { return metav1.NewTime(m.cfg.Clock.Now()) }
