package containerlog_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit-dev/nodekit/containerlog"
	"github.com/nodekit-dev/nodekit/runtime"
)

// The CRI client is a containerlog.Runtime as it is.
var _ containerlog.Runtime = (*runtime.Client)(nil)

// errNotFound is what the fake runtime says of a container it does not have.
var errNotFound = errors.New("not found")

// fakeRuntime is a runtime whose containers write to real files: each
// holds its log open, and ReopenContainerLog opens a new file at the same
// path, as containerd does after a rotation renamed the old one away.
// Listings and statuses are built when containers change, not per call,
// so that a benchmark measures the manager.
type fakeRuntime struct {
	mu         sync.Mutex
	containers map[string]*fakeContainer
	list       []*runtimeapi.Container
	reopenErr  error
	// reopenHook, if set, runs in ReopenContainerLog before the reopen,
	// without the lock (a test blocks or counts there).
	reopenHook func(id string)
	reopens    map[string]int
	statusErr  map[string]error
	statuses   int // ContainerStatus calls
}

type fakeContainer struct {
	state  runtimeapi.ContainerState
	path   string
	f      *os.File
	status *runtimeapi.ContainerStatusResponse
}

func newFakeRuntime() *fakeRuntime {
	return &fakeRuntime{containers: map[string]*fakeContainer{}, reopens: map[string]int{}, statusErr: map[string]error{}}
}

// add starts a running container writing to path; its file is closed at
// the end of the test.
func (r *fakeRuntime) add(t testing.TB, id, path string) {
	t.Helper()
	f, err := openLog(path)
	require.NoError(t, err)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.containers[id] = &fakeContainer{state: runtimeapi.ContainerState_CONTAINER_RUNNING, path: path, f: f}
	r.rebuildLocked()
	t.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.containers[id].f.Close()
	})
}

func (r *fakeRuntime) setState(id string, s runtimeapi.ContainerState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.containers[id].state = s
	r.rebuildLocked()
}

func (r *fakeRuntime) rebuildLocked() {
	r.list = make([]*runtimeapi.Container, 0, len(r.containers)) // a new slice: callers keep the old one
	for id, c := range r.containers {
		r.list = append(r.list, &runtimeapi.Container{Id: id, State: c.state})
		c.status = &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: id, State: c.state, LogPath: c.path}}
	}
}

// write appends b to the container's current log file.
func (r *fakeRuntime) write(t testing.TB, id string, b []byte) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	_, err := r.containers[id].f.Write(b)
	require.NoError(t, err)
}

func (r *fakeRuntime) statusCalls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.statuses
}

func (r *fakeRuntime) reopenCount(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reopens[id]
}

func (r *fakeRuntime) ListContainers(_ context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// The state filter is ignored on purpose: the manager checks again.
	return r.list, nil
}

func (r *fakeRuntime) ContainerStatus(_ context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.statuses++
	if err := r.statusErr[id]; err != nil {
		return nil, err
	}
	c, ok := r.containers[id]
	if !ok {
		return nil, fmt.Errorf("container %q: %w", id, errNotFound)
	}
	return c.status, nil
}

func (r *fakeRuntime) ReopenContainerLog(_ context.Context, id string) error {
	if h := r.reopenHook; h != nil {
		h(id)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	switch {
	case !ok:
		return fmt.Errorf("container %q: %w", id, errNotFound)
	case c.state != runtimeapi.ContainerState_CONTAINER_RUNNING:
		return errors.New("container is not running")
	case r.reopenErr != nil:
		return r.reopenErr
	}
	f, err := openLog(c.path)
	if err != nil {
		return err
	}
	c.f.Close()
	c.f = f
	r.reopens[id]++
	return nil
}

func openLog(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
}
