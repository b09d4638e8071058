package oomwatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
)

// EventRecorder records events; *events.Recorder (as client-go's
// record.EventRecorder) implements it, so oomwatch needs no client-go.
type EventRecorder interface {
	Eventf(object apiruntime.Object, eventtype, reason, messageFmt string, args ...any)
}

// ReasonSystemOOM is the reason of the kubelet's event on the Node for a
// system-wide OOM.
const ReasonSystemOOM = "SystemOOM"

// Config configures a Watcher. Zero fields take defaults.
type Config struct {
	// Source gives the kernel log (default: Kmsg{}, /dev/kmsg from its end).
	Source Source
	// Recorder, if set, gets the SystemOOM events, on NodeRef.
	Recorder EventRecorder
	NodeRef  *v1.ObjectReference
	// Clock dates the kernel's boot when BootTime is zero (default: real).
	Clock clock.PassiveClock
	// BootTime is when the kernel's log clock started, to date the OOMs
	// (default: Clock's now less the monotonic clock).
	BootTime time.Time
	Log      logr.Logger
}

// withDefaults checks c and fills in its defaults.
func (c Config) withDefaults() (Config, error) {
	if c.Recorder != nil && c.NodeRef == nil {
		return c, errors.New("oomwatch: Config.NodeRef: Required value: the Recorder records on the Node")
	}
	if c.Source == nil {
		c.Source = Kmsg{}
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.BootTime.IsZero() {
		boot, err := bootTime(c.Clock.Now())
		if err != nil {
			return c, err
		}
		c.BootTime = boot
	}
	return c, nil
}

// Watcher is the kubelet's OOM watcher: it reads the kernel log, records
// a SystemOOM event on the Node for each system-wide OOM kill, and counts
// OOM kills per memory cgroup (OOMEvents). It is safe for concurrent use.
type Watcher struct {
	cfg     Config
	running atomic.Bool

	mu     sync.Mutex
	counts map[string]uint64 // OOM kills by memory cgroup, as the kernel prints it
}

// New checks cfg and fills in its defaults.
func New(cfg Config) (*Watcher, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Watcher{cfg: cfg, counts: map[string]uint64{}}, nil
}

// Run watches the kernel log until ctx is done or the log ends (nil), or
// the Source fails: an error naming it, such as "oomwatch: open
// /dev/kmsg: permission denied". Only one Run at a time: each kill is
// counted once.
func (w *Watcher) Run(ctx context.Context) error {
	if !w.running.CompareAndSwap(false, true) {
		return errors.New("oomwatch: Run: already running")
	}
	defer w.running.Store(false)
	parser := NewParser(w.cfg.BootTime)
	err := w.cfg.Source.Stream(logr.NewContext(ctx, w.cfg.Log), func(line string) {
		if oom, ok := parser.Feed(line); ok {
			w.observe(oom)
		}
	})
	if err == nil && ctx.Err() == nil {
		w.cfg.Log.Info("Kernel log ended; OOM kills are no longer watched")
	}
	return err
}

// observe counts an OOM kill and records the kubelet's event for a
// system-wide one.
func (w *Watcher) observe(oom OOM) {
	w.cfg.Log.V(2).Info("OOM kill", "pid", oom.Pid, "process", oom.ProcessName, "cgroup", oom.ContainerName,
		"oomCgroup", oom.VictimContainerName, "constraint", oom.Constraint, "time", oom.TimeOfDeath)
	w.mu.Lock()
	w.counts[oom.ContainerName]++
	if oom.System() && oom.ContainerName != RootCgroup {
		// "/" keeps counting the system OOMs, as in the kubelet, whose
		// parser never knows a system OOM's task_memcg.
		w.counts[RootCgroup]++
	}
	w.mu.Unlock()
	if !oom.System() {
		return
	}
	w.cfg.Log.V(1).Info("System OOM", "pid", oom.Pid, "process", oom.ProcessName)
	if w.cfg.Recorder != nil {
		w.cfg.Recorder.Eventf(w.cfg.NodeRef, v1.EventTypeWarning, ReasonSystemOOM, "%s", SystemOOMMessage(oom))
	}
}

// SystemOOMMessage is the kubelet's message of a SystemOOM event.
func SystemOOMMessage(oom OOM) string {
	msg := "System OOM encountered"
	if oom.ProcessName != "" && oom.Pid != 0 {
		msg = fmt.Sprintf("%s, victim process: %s, pid: %d", msg, oom.ProcessName, oom.Pid)
	}
	return msg
}

// OOMEvents is the number of OOM kills of processes in the memory cgroup
// cgroupName, as the kernel prints its path (the kubelet's
// container_oom_events_total for that container): 0 for a cgroup never
// seen. RootCgroup counts the system-wide OOMs.
func (w *Watcher) OOMEvents(cgroupName string) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.counts[cgroupName]
}

// Forget drops the count of cgroupName: call it when the cgroup is
// removed (the kubelet never prunes, so its map only grows). A kill
// logged before and read after Forget counts again, from 1.
func (w *Watcher) Forget(cgroupName string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.counts, cgroupName)
}
