package prober

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/prober/probe"
)

// StatusProvider tells workers their container's current ID, state and
// start time; *statuscache.Cache implements it.
type StatusProvider interface {
	Get(uid types.UID) (*kc.PodStatus, error)
}

// EventRecorder records events on pods; *events.Recorder (as client-go's
// record.EventRecorder) implements it, so prober needs no client-go.
type EventRecorder interface {
	Eventf(object apiruntime.Object, eventtype, reason, messageFmt string, args ...any)
}

// The kubelet's probe event reasons.
const (
	EventUnhealthy    = "Unhealthy"
	EventProbeWarning = "ProbeWarning"
)

// Config configures a Manager. Zero fields take defaults.
type Config struct {
	Statuses StatusProvider
	// Exec runs exec probes in containers (the CRI client); nil makes exec
	// probes error.
	Exec probe.Execer
	// Runner overrides how probes run (default: package probe's handlers).
	Runner Runner
	// HostIP is the address probed for host-network pods (default 127.0.0.1).
	HostIP string
	Clock  clock.WithTicker
	// MaxConcurrentProbes bounds probes in flight (default 512).
	MaxConcurrentProbes int
	// UpdatesCapacity is each Results channel's buffer (default 20, the
	// kubelet's results manager): a full channel holds back the probe
	// that changed, as in the kubelet, until the consumer reads.
	UpdatesCapacity int
	Metrics         *Metrics
	// Recorder gets the kubelet's Unhealthy and ProbeWarning events on
	// the pod's container; nil records none.
	Recorder EventRecorder
	Log      logr.Logger
	// Rand returns [0,1) for the start-up jitter (default math/rand/v2).
	Rand func() float64
}

// Manager runs liveness, readiness and startup probes for pods: one worker
// per (pod, container, probe type), all scheduled by one scheduler.
//
// The kubelet runs a goroutine and a ticker per probe and lets them all run
// at once. Here one scheduler goroutine keeps the workers in a heap ordered
// by due time, with a single timer, and does each due worker's bookkeeping
// itself. With the default Runner, plain-HTTP and TCP probes of IP
// addresses, nearly all probes, run there too, through probe.Batch:
// non-blocking sockets, answers read on the scheduler's next wake-ups, and
// probes due within 2ms of each other started together, so that thousands
// of probes share a few hundred wake-ups a second (BenchmarkManyWorkers
// reports the CPU, user and kernel apart). Exec, gRPC and https probes, and
// those of a custom Runner, run on a goroutine each.
//
// At most MaxConcurrentProbes (default 512) probes are in flight: a
// thousand hanging targets cost at most that many sockets, each cut off at
// its timeout, and only delay other probes once the bound is reached. Every
// HTTP probe opens a fresh connection, as the kubelet does, and closes it
// with SO_LINGER 0 so probes leave no TIME_WAIT.
type Manager struct {
	cfg       Config
	start     time.Time
	sched     *scheduler
	liveness  *Results
	readiness *Results
	startup   *Results

	run *runState // set by Run
	ran atomic.Bool

	mu      sync.Mutex
	workers map[workerKey]*worker
}

// New returns a Manager; call Run to start probing.
func New(cfg Config) (*Manager, error) {
	if cfg.Statuses == nil {
		return nil, errors.New("prober: Statuses is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.HostIP == "" {
		cfg.HostIP = "127.0.0.1"
	}
	if cfg.MaxConcurrentProbes <= 0 {
		cfg.MaxConcurrentProbes = 512
	}
	if cfg.UpdatesCapacity <= 0 {
		cfg.UpdatesCapacity = 20
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics()
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	if cfg.Runner == nil {
		cfg.Runner = NewRunner(cfg.Exec)
	}
	return &Manager{
		cfg:       cfg,
		start:     cfg.Clock.Now(),
		sched:     newScheduler(cfg.Clock, cfg.MaxConcurrentProbes),
		liveness:  newResults(Liveness, cfg.UpdatesCapacity),
		readiness: newResults(Readiness, cfg.UpdatesCapacity),
		startup:   newResults(Startup, cfg.UpdatesCapacity),
		workers:   map[workerKey]*worker{},
	}, nil
}

// Liveness, Readiness and Startup hold the results; read their Updates.
func (m *Manager) Liveness() *Results  { return m.liveness }
func (m *Manager) Readiness() *Results { return m.readiness }
func (m *Manager) Startup() *Results   { return m.startup }

// LivenessFailed and StartupFailed let the runtime manager decide restarts
// (kuberuntime.ProbeResults).
func (m *Manager) LivenessFailed(containerID string) bool {
	r, ok := m.liveness.Get(containerID)
	return ok && r == probe.Failure
}

// StartupFailed reports a container whose startup probe failed.
func (m *Manager) StartupFailed(containerID string) bool {
	r, ok := m.startup.Get(containerID)
	return ok && r == probe.Failure
}

// StartupSucceeded reports a container whose startup probe succeeded; the
// runtime manager starts the init container after a sidecar only then.
func (m *Manager) StartupSucceeded(containerID string) bool {
	r, ok := m.startup.Get(containerID)
	return ok && r == probe.Success
}

// AddPod starts workers for every probe of the pod's containers and
// sidecars (restartable init containers: the kubelet probes them too, the
// other init containers never); probes that already have a worker are left
// alone.
func (m *Manager) AddPod(pod *v1.Pod) {
	now := m.cfg.Clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	var probed []*v1.Container
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; sidecar(c) {
			probed = append(probed, c)
		}
	}
	for i := range pod.Spec.Containers {
		probed = append(probed, &pod.Spec.Containers[i])
	}
	for _, c := range probed {
		for t, spec := range map[ProbeType]*v1.Probe{Liveness: c.LivenessProbe, Readiness: c.ReadinessProbe, Startup: c.StartupProbe} {
			if spec == nil {
				continue
			}
			key := workerKey{uid: pod.UID, container: c.Name, probeType: t}
			if _, ok := m.workers[key]; ok {
				continue
			}
			w := &worker{key: key, pod: pod, container: c, spec: defaulted(spec), results: m.resultsFor(t), mgr: m}
			w.batchDone = func(res probe.Result, msg string, err error) { m.batchDone(w, res, msg, err) }
			m.cfg.Metrics.bind(w)
			m.workers[key] = w
			due := now
			// After an agent restart all probes would fire together: spread
			// the first round over a period.
			if p := w.period(); p > now.Sub(m.start) {
				due = now.Add(time.Duration(m.cfg.Rand() * float64(p)))
			}
			m.sched.add(w, due)
		}
	}
}

// RemovePod stops the pod's workers.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	var ws []*worker
	for k, w := range m.workers {
		if k.uid == uid {
			ws = append(ws, w)
		}
	}
	m.mu.Unlock()
	for _, w := range ws {
		m.stop(w)
	}
}

// CleanupPods stops the workers of pods not in desired.
func (m *Manager) CleanupPods(desired map[types.UID]struct{}) {
	m.mu.Lock()
	var ws []*worker
	for k, w := range m.workers {
		if _, ok := desired[k.uid]; !ok {
			ws = append(ws, w)
		}
	}
	m.mu.Unlock()
	for _, w := range ws {
		m.stop(w)
	}
}

// Workers returns how many workers exist.
func (m *Manager) Workers() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.workers)
}

func (m *Manager) stop(w *worker) {
	if !m.sched.remove(w) {
		m.retire(w)
	}
	// A running worker is retired when its probe returns.
}

// retire forgets a stopped worker and its results.
func (m *Manager) retire(w *worker) {
	m.mu.Lock()
	if m.workers[w.key] == w {
		delete(m.workers, w.key)
	}
	m.mu.Unlock()
	if w.containerID != "" {
		w.results.remove(w.containerID)
	}
	m.cfg.Metrics.unbind(w)
}

func (m *Manager) resultsFor(t ProbeType) *Results {
	switch t {
	case Liveness:
		return m.liveness
	case Readiness:
		return m.readiness
	}
	return m.startup
}

func (m *Manager) worker(uid types.UID, container string, t ProbeType) *worker {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.workers[workerKey{uid: uid, container: container, probeType: t}]
}

// started: the container has no startup probe, or it succeeded.
func (m *Manager) started(uid types.UID, container, containerID string) bool {
	if r, ok := m.startup.Get(containerID); ok {
		return r == probe.Success
	}
	return m.worker(uid, container, Startup) == nil
}

// UpdatePodStatus sets Started and Ready on the status's container
// statuses from the probe results, as the kubelet's UpdatePodStatus does: a
// running container has started when it has no startup probe or it
// succeeded, and is ready when it has started and has no readiness probe or
// it succeeded. A readiness probe without a result yet is run at once. Init
// containers get Started the same way; a sidecar's Ready follows the same
// rule, a regular init container is ready once it exited 0.
func (m *Manager) UpdatePodStatus(pod *v1.Pod, status *v1.PodStatus) {
	for i := range status.ContainerStatuses {
		c := &status.ContainerStatuses[i]
		started := m.isStarted(pod, c)
		c.Started = &started
		c.Ready = started && m.isReady(pod, c)
	}
	for i := range status.InitContainerStatuses {
		c := &status.InitContainerStatuses[i]
		started := m.isStarted(pod, c)
		c.Started = &started
		spec := initContainer(pod, c.Name)
		if spec == nil || !sidecar(spec) {
			if c.State.Terminated != nil && c.State.Terminated.ExitCode == 0 {
				c.Ready = true
			}
			continue
		}
		c.Ready = started && m.isReady(pod, c)
	}
}

func (m *Manager) isStarted(pod *v1.Pod, c *v1.ContainerStatus) bool {
	return c.State.Running != nil && m.started(pod.UID, c.Name, kc.TrimRuntimeType(c.ContainerID))
}

// isReady: a running, started container is ready when its readiness probe
// succeeded or it has none.
func (m *Manager) isReady(pod *v1.Pod, c *v1.ContainerStatus) bool {
	if c.State.Running == nil {
		return false
	}
	if r, ok := m.readiness.Get(kc.TrimRuntimeType(c.ContainerID)); ok && r == probe.Success {
		return true
	}
	if w := m.worker(pod.UID, c.Name, Readiness); w != nil {
		m.sched.trigger(w)
		return false
	}
	return true
}

// sidecar: an init container with restartPolicy Always.
func sidecar(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

func initContainer(pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}
