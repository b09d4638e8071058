package containerlog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Manager is the kubelet's container log manager
// (pkg/kubelet/logs/container_log_manager.go): it rotates the log of every
// running container that has reached MaxSize, keeping at most MaxFiles
// files per log, and removes a container's logs with it.
type Manager struct {
	cfg     Config
	maxSize int64 // bytes; negative: rotation disabled
	// running is the ListContainers filter: only running containers are
	// rotated, so the runtime need not send the others.
	running *runtimeapi.ContainerFilter

	mu   sync.Mutex
	idle *sync.Cond      // broadcast when a container leaves busy
	busy map[string]bool // containers being rotated or cleaned
	// paths are the log paths of the containers last seen running: a
	// container's never changes, so a pass needs no status for a log
	// below MaxSize.
	paths map[string]string
}

// NewManager checks cfg and fills in the kubelet's defaults; a
// configuration the kubelet refuses is an error naming the field, the
// value and the kubelet's message.
func NewManager(cfg Config) (*Manager, error) {
	cfg, maxSize, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	m := &Manager{
		cfg: cfg, maxSize: maxSize, busy: map[string]bool{}, paths: map[string]string{},
		running: &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}},
	}
	m.idle = sync.NewCond(&m.mu)
	return m, nil
}

// Config returns the configuration in force, defaults filled in.
func (m *Manager) Config() Config { return m.cfg }

// HotCheckInterval is how often a hot log (one that reached MaxSize
// within the last MonitorInterval) is looked at between Run's passes.
const HotCheckInterval = 500 * time.Millisecond

// Run rotates what needs rotating every MonitorInterval, the first time at
// once, until ctx ends; it then returns nil. A failed pass is logged, as
// the kubelet does, and the next one tries again. A log rotated within
// the last interval is hot: it is looked at every HotCheckInterval too, so
// that a fast writer rotates near MaxSize instead of growing by up to a
// MonitorInterval's worth of writes. With a negative MaxSize Run only
// waits for ctx, as the kubelet's stub manager.
func (m *Manager) Run(ctx context.Context) error {
	if m.maxSize < 0 {
		m.cfg.Log.Info("Container log rotation is disabled", "maxSize", m.cfg.MaxSize.String())
		<-ctx.Done()
		return nil
	}
	m.cfg.Log.Info("Initializing container log rotate workers", "workers", m.cfg.MaxWorkers, "monitorPeriod", m.cfg.MonitorInterval)
	t := m.cfg.Clock.NewTicker(m.cfg.MonitorInterval)
	defer t.Stop()
	fast := m.cfg.Clock.NewTicker(HotCheckInterval)
	defer fast.Stop()
	hot, warm := map[string]string{}, map[string]string{} // ID: log path; warm: rotated since the last pass
	for {
		rotated, err := m.rotateAll(ctx)
		switch {
		case ctx.Err() != nil:
		case err != nil:
			m.cfg.Log.Error(err, "Failed to rotate container logs", "rotated", len(rotated))
		case len(rotated) > 0:
			m.cfg.Log.V(4).Info("Rotated container logs", "containers", len(rotated))
		}
		maps.Copy(warm, rotated)
		hot, warm = warm, map[string]string{}
		for waiting := true; waiting; {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C():
				waiting = false
			case <-fast.C():
				m.checkHot(ctx, hot, warm)
			}
		}
	}
}

// checkHot rotates the hot logs that reached MaxSize, and keeps those
// it rotated warm.
func (m *Manager) checkHot(ctx context.Context, hot, warm map[string]string) {
	for id, path := range hot {
		if info, err := os.Stat(path); err != nil || info.Size() < m.maxSize {
			continue
		}
		switch ok, _, err := m.rotate(ctx, id); {
		case errors.Is(err, fs.ErrExist):
			// Rotated within this second already: the next check does it.
		case err != nil:
			m.cfg.Log.Error(err, "Failed to rotate a hot container log", "containerID", id)
		case ok:
			warm[id] = path
		}
	}
}

// RotateAll is one pass of Run: every running container's log is looked
// at, MaxWorkers at a time, and rotated if it has reached MaxSize (see
// Rotate). It returns the IDs of the containers whose logs it rotated, and
// the failures joined, each naming its container.
func (m *Manager) RotateAll(ctx context.Context) ([]string, error) {
	rotated, err := m.rotateAll(ctx)
	ids := slices.Sorted(maps.Keys(rotated))
	return ids, err
}

// rotateAll is RotateAll, with the rotated logs' paths by container ID.
func (m *Manager) rotateAll(ctx context.Context) (map[string]string, error) {
	if m.maxSize < 0 {
		return nil, nil
	}
	containers, err := m.cfg.Runtime.ListContainers(ctx, m.running)
	if err != nil {
		return nil, fmt.Errorf("failed to list containers: %w", err)
	}
	ids := make([]string, 0, len(containers))
	for _, c := range containers {
		// Checked again: a runtime may ignore the filter.
		if c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			ids = append(ids, c.GetId())
		}
	}
	m.keepPaths(ids)
	rotated := make([]bool, len(ids))
	paths := make([]string, len(ids))
	errs := make([]error, len(ids))
	var next atomic.Int64
	work := func() {
		for i := int(next.Add(1) - 1); i < len(ids) && ctx.Err() == nil; i = int(next.Add(1) - 1) {
			rotated[i], paths[i], errs[i] = m.rotate(ctx, ids[i])
		}
	}
	if workers := min(m.cfg.MaxWorkers, len(ids)); workers <= 1 {
		work() // no goroutine for the kubelet's default of one worker
	} else {
		var wg sync.WaitGroup
		for range workers {
			wg.Go(work)
		}
		wg.Wait()
	}
	out := map[string]string{}
	var failed []error
	for i, id := range ids {
		if rotated[i] {
			out[id] = paths[i]
		}
		if errs[i] != nil {
			failed = append(failed, fmt.Errorf("container %s: %w", id, errs[i]))
		}
	}
	return out, errors.Join(failed...)
}

// Rotate rotates one container's log if it has reached MaxSize, as the
// kubelet's worker does: a log file that has gone missing is first
// reopened; rotated files left by an interrupted rotation (.tmp, or
// already compressed) are removed, then the oldest beyond MaxFiles-2,
// the rest are compressed, and the live log is renamed to
// <log>.<YYYYMMDD-hhmmss> before the runtime reopens it (renamed back if it
// cannot). A container that is not running is left alone: it writes
// nothing more, and an empty latest log would be of no use. One
// container is rotated by one caller at a time; another waits.
func (m *Manager) Rotate(ctx context.Context, containerID string) error {
	if m.maxSize < 0 {
		return nil
	}
	_, _, err := m.rotate(ctx, containerID)
	return err
}

// rotate is Rotate; it reports whether the log, at path, was rotated.
func (m *Manager) rotate(ctx context.Context, id string) (bool, string, error) {
	m.acquire(id)
	defer m.release(id)
	if path, ok := m.knownPath(id); ok {
		// The kubelet reads every container's status at every pass: 25
		// calls a second on a node of 250 pods, for logs that mostly
		// need nothing. A small log is left as it would be whether or not
		// the container still runs; any other goes the kubelet's way.
		if info, err := os.Stat(path); err == nil && info.Size() < m.maxSize {
			m.notYet(id, path, info.Size())
			return false, path, nil
		}
	}
	resp, err := m.cfg.Runtime.ContainerStatus(ctx, id, false)
	if err != nil {
		return false, "", fmt.Errorf("failed to get container status %q: %w", id, err)
	}
	status := resp.GetStatus()
	if status == nil {
		return false, "", fmt.Errorf("container status is nil for %q", id)
	}
	path := status.GetLogPath()
	if status.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING || path == "" {
		m.setPath(id, "")
		return false, "", nil
	}
	m.setPath(id, path)
	size, err := m.liveSize(ctx, id, path)
	if err != nil {
		return false, path, err
	}
	if size < m.maxSize {
		m.notYet(id, path, size)
		return false, path, nil
	}
	if err := m.rotateLog(ctx, id, path); err != nil {
		return false, path, fmt.Errorf("failed to rotate log for container %q (size %d, max %d): %w", id, size, m.maxSize, err)
	}
	return true, path, nil
}

func (m *Manager) notYet(id, path string, size int64) {
	if v := m.cfg.Log.V(7); v.Enabled() { // no arguments built at lower verbosity
		v.Info("log file doesn't need to be rotated", "containerID", id, "path", path, "currentSize", size, "maxSize", m.maxSize)
	}
}

func (m *Manager) knownPath(id string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	path, ok := m.paths[id]
	return path, ok
}

// setPath remembers the container's log path; "" forgets it.
func (m *Manager) setPath(id, path string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if path == "" {
		delete(m.paths, id)
	} else {
		m.paths[id] = path
	}
}

// keepPaths forgets the paths of containers no longer listed running.
func (m *Manager) keepPaths(running []string) {
	keep := make(map[string]bool, len(running))
	for _, id := range running {
		keep[id] = true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	maps.DeleteFunc(m.paths, func(id, _ string) bool { return !keep[id] })
}

// liveSize is the size of the live log; a missing one is reopened first,
// as the kubelet does (an earlier rotation's rename back may have failed).
func (m *Manager) liveSize(ctx context.Context, id, path string) (int64, error) {
	info, err := os.Stat(path)
	if err == nil {
		return info.Size(), nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("failed to stat container log %q: %w", path, err)
	}
	if err := m.cfg.Runtime.ReopenContainerLog(ctx, id); err != nil {
		return 0, fmt.Errorf("container log %q doesn't exist, reopen container log failed: %w", path, err)
	}
	if info, err = os.Stat(path); err != nil {
		return 0, fmt.Errorf("failed to stat container log %q after reopen: %w", path, err)
	}
	return info.Size(), nil
}

// Clean removes all of a container's logs, the rotated ones included (the
// kubelet's Clean, before it removes the container). It waits for a
// rotation of the container in progress.
func (m *Manager) Clean(ctx context.Context, containerID string) error {
	m.acquire(containerID)
	defer m.release(containerID)
	m.setPath(containerID, "")
	resp, err := m.cfg.Runtime.ContainerStatus(ctx, containerID, false)
	if err != nil {
		return fmt.Errorf("failed to get container status %q: %w", containerID, err)
	}
	if resp.GetStatus() == nil {
		return fmt.Errorf("container status is nil for %q", containerID)
	}
	if err := RemoveLogs(resp.GetStatus().GetLogPath()); err != nil {
		return fmt.Errorf("failed to remove container %q logs: %w", containerID, err)
	}
	return nil
}

// acquire waits until no one else rotates or cleans the container, and
// marks it busy. A wait is as long as one rotation, whose runtime calls
// end with its ctx.
func (m *Manager) acquire(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.busy[id] {
		m.idle.Wait()
	}
	m.busy[id] = true
}

func (m *Manager) release(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.busy, id)
	m.idle.Broadcast()
}
