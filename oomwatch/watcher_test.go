package oomwatch_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/oomwatch"
)

var nodeRef = &v1.ObjectReference{Kind: "Node", Name: "node-1", UID: "node-1"}

// event is one recorded event, its message formatted.
type event struct {
	object                  apiruntime.Object
	eventType, reason, text string
}

type fakeRecorder struct {
	mu     sync.Mutex
	events []event
}

func (r *fakeRecorder) Eventf(object apiruntime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, event{object, eventtype, reason, fmt.Sprintf(messageFmt, args...)})
}

func (r *fakeRecorder) get() []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event(nil), r.events...)
}

func systemOOMEvent(text string) event { return event{nodeRef, v1.EventTypeWarning, "SystemOOM", text} }

// kmsgFile writes testdata's reports, in order, to a file for Kmsg.
func kmsgFile(t *testing.T, names ...string) string {
	t.Helper()
	var lines []string
	for _, name := range names {
		lines = append(lines, readLines(t, name)...)
	}
	path := filepath.Join(t.TempDir(), "kmsg")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	return path
}

func newWatcher(t *testing.T, src oomwatch.Source, rec oomwatch.EventRecorder) *oomwatch.Watcher {
	t.Helper()
	w, err := oomwatch.New(oomwatch.Config{Source: src, Recorder: rec, NodeRef: nodeRef, BootTime: boot})
	require.NoError(t, err)
	return w
}

// The kubelet's event for a system OOM only; every kill counted for the
// killed process's cgroup, a system OOM's for "/" too.
func TestWatcherKernelReports(t *testing.T) {
	javaEvent := systemOOMEvent("System OOM encountered, victim process: java, pid: 6012")
	for _, tc := range []struct {
		name   string
		files  []string
		events []event
		counts map[string]uint64
	}{
		{"memcg OOM", []string{"memcg-oom-6.18.kmsg"}, nil,
			map[string]uint64{memcgContainer: 1, memcgPod: 0, "/": 0}},
		{"system OOM", []string{"system-oom-6.18.kmsg"}, []event{javaEvent},
			map[string]uint64{systemVictim: 1, "/": 1}},
		{"legacy memcg OOM", []string{"legacy-oom-4.14.kmsg"}, nil,
			map[string]uint64{legacyVictim: 1, legacyPod: 0, "/": 0}},
		{"all, twice", []string{"memcg-oom-6.18.kmsg", "system-oom-6.18.kmsg", "legacy-oom-4.14.kmsg",
			"memcg-oom-6.18.kmsg", "system-oom-6.18.kmsg"}, []event{javaEvent, javaEvent},
			map[string]uint64{memcgContainer: 2, systemVictim: 2, legacyVictim: 1, "/": 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &fakeRecorder{}
			w := newWatcher(t, oomwatch.Kmsg{Path: kmsgFile(t, tc.files...), FromStart: true}, rec)
			require.NoError(t, w.Run(context.Background()))
			assert.Equal(t, tc.events, rec.get())
			for cgroup, want := range tc.counts {
				assert.Equal(t, want, w.OOMEvents(cgroup), cgroup)
			}
		})
	}
}

func TestSystemOOMMessage(t *testing.T) {
	for _, tc := range []struct {
		oom  oomwatch.OOM
		want string
	}{
		{oomwatch.OOM{Pid: 6012, ProcessName: "java"}, "System OOM encountered, victim process: java, pid: 6012"},
		{oomwatch.OOM{Pid: 6012}, "System OOM encountered"},
		{oomwatch.OOM{ProcessName: "java"}, "System OOM encountered"},
	} {
		assert.Equal(t, tc.want, oomwatch.SystemOOMMessage(tc.oom))
	}
}

// Streaming from a FIFO as from /dev/kmsg: each report counts as it
// comes, without a recorder; cancelling ends Run without an error.
func TestWatcherStreams(t *testing.T) {
	path, fifo := mkfifo(t)
	w := newWatcher(t, oomwatch.Kmsg{Path: path}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	for i, name := range []string{"memcg-oom-6.18.kmsg", "memcg-oom-6.18.kmsg", "system-oom-6.18.kmsg"} {
		_, err := fifo.WriteString(strings.Join(readLines(t, name), "\n") + "\n")
		require.NoError(t, err)
		want := []uint64{1, 2, 2}[i]
		poll.Eventually(t, func() bool { return w.OOMEvents(memcgContainer) == want && w.OOMEvents("/") == uint64(i/2) },
			10*time.Second, time.Millisecond, "report %d (%s)", i, name)
	}
	w.Forget(memcgContainer)
	assert.Zero(t, w.OOMEvents(memcgContainer))
	assert.Equal(t, uint64(1), w.OOMEvents(systemVictim))

	cancel()
	require.NoError(t, <-done)
}

func TestWatcherRunErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing")
	w := newWatcher(t, oomwatch.Kmsg{Path: path}, nil)
	err := w.Run(context.Background())
	require.ErrorIs(t, err, fs.ErrNotExist)
	assert.Contains(t, err.Error(), path)

	// One Run at a time.
	started := make(chan struct{})
	w = newWatcher(t, oomwatch.SourceFunc(func(ctx context.Context, _ func(string)) error {
		close(started)
		<-ctx.Done()
		return nil
	}), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	<-started
	assert.EqualError(t, w.Run(ctx), "oomwatch: Run: already running")
	cancel()
	require.NoError(t, <-done)
}

func TestNewConfig(t *testing.T) {
	_, err := oomwatch.New(oomwatch.Config{Recorder: &fakeRecorder{}})
	assert.EqualError(t, err, "oomwatch: Config.NodeRef: Required value: the Recorder records on the Node")

	// Defaults: a boot time from the clock (a fake one here) and the
	// monotonic clock.
	w, err := oomwatch.New(oomwatch.Config{Clock: testingclock.NewFakePassiveClock(time.Now()),
		Source: oomwatch.SourceFunc(func(_ context.Context, line func(string)) error {
			for _, l := range readLines(t, "memcg-oom-6.18.kmsg") {
				line(l)
			}
			return nil
		})})
	require.NoError(t, err)
	require.NoError(t, w.Run(context.Background()))
	assert.Equal(t, uint64(1), w.OOMEvents(memcgContainer))
}
