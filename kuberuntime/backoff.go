package kuberuntime

import (
	"fmt"
	"sync"
	"time"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// CrashLoopBackOff defaults: the first restart is immediate, then 10s,
// doubling to 5m; an entry is forgotten after twice the maximum without a
// failure (flowcontrol.Backoff as the kubelet uses it, without jitter).
const (
	DefaultBackOffInitial = 10 * time.Second
	DefaultBackOffMax     = 300 * time.Second
)

// Backoff tracks per-key restart delays.
type Backoff struct {
	clock   clock.PassiveClock
	initial time.Duration
	max     time.Duration

	mu      sync.Mutex
	entries map[string]*backoffEntry
}

type backoffEntry struct {
	delay      time.Duration
	lastUpdate time.Time
}

// NewBackoff returns a Backoff on clk (nil: wall clock).
func NewBackoff(clk clock.PassiveClock, initial, max time.Duration) *Backoff {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Backoff{clock: clk, initial: initial, max: max, entries: map[string]*backoffEntry{}}
}

// Get returns the current delay for key (0 if none).
func (b *Backoff) Get(key string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.entries[key]; ok {
		return e.delay
	}
	return 0
}

// Next records a failure at eventTime and grows the delay.
func (b *Backoff) Next(key string, eventTime time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok || b.expired(e, eventTime) {
		e = &backoffEntry{delay: b.initial}
		b.entries[key] = e
	} else {
		e.delay = min(e.delay*2, b.max)
	}
	e.lastUpdate = b.clock.Now()
}

// IsInBackOffSince reports whether, for a failure at eventTime, the delay
// has not passed yet.
func (b *Backoff) IsInBackOffSince(key string, eventTime time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok || b.expired(e, eventTime) {
		return false
	}
	return b.clock.Since(eventTime) < e.delay
}

// IsInBackOffSinceUpdate reports whether eventTime is within the delay of
// the last recorded failure (the kubelet's image-pull back-off).
func (b *Backoff) IsInBackOffSinceUpdate(key string, eventTime time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok || b.expired(e, eventTime) {
		return false
	}
	return eventTime.Sub(e.lastUpdate) < e.delay
}

// GC forgets entries idle for more than twice the maximum delay.
func (b *Backoff) GC() {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	for k, e := range b.entries {
		if now.Sub(e.lastUpdate) > 2*b.max {
			delete(b.entries, k)
		}
	}
}

func (b *Backoff) expired(e *backoffEntry, eventTime time.Time) bool {
	return eventTime.Sub(e.lastUpdate) > 2*b.max
}

// backoffKey identifies a container across restarts (the kubelet's GetStableKey).
func backoffKey(pod *v1.Pod, c *v1.Container) string {
	return fmt.Sprintf("%s_%s_%s_%s_%x", pod.Name, pod.Namespace, pod.UID, c.Name, kc.HashContainer(c))
}
