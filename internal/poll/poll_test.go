package poll_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/internal/poll"
)

// recorder is a TestingT that records instead of failing.
type recorder struct {
	errors []string
	failed bool
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) FailNow() { r.failed = true }
func (r *recorder) Helper()  {}

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	var looks atomic.Int32
	poll.Eventually(t, func() bool { return looks.Add(1) == 3 }, 10*time.Second, time.Millisecond, "three looks")
	assert.Equal(t, int32(3), looks.Load(), "looked at until it held, not after")

	looks.Store(0)
	poll.Eventually(t, func() bool { looks.Add(1); return true }, 0, time.Hour)
	assert.Equal(t, int32(1), looks.Load(), "a condition that holds at once is looked at once, however long the tick")
}

func TestEventuallyFailsWithTestifysMessage(t *testing.T) {
	r := &recorder{}
	start := time.Now()
	poll.Eventually(r, func() bool { return false }, 50*time.Millisecond, 10*time.Millisecond, "pod %s running", "web")
	assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond, "waited the whole deadline")
	assert.True(t, r.failed, "FailNow called")
	if assert.Len(t, r.errors, 1) {
		assert.Contains(t, r.errors[0], "Condition never satisfied")
		assert.Contains(t, r.errors[0], "after 50ms: pod web running")
	}

	r = &recorder{}
	poll.Eventually(r, func() bool { return false }, 0, time.Millisecond)
	if assert.Len(t, r.errors, 1) {
		assert.Contains(t, r.errors[0], "after 0s: the condition")
	}
}

func TestUntilSaysWhetherTheConditionHeld(t *testing.T) {
	var looks atomic.Int32
	assert.True(t, poll.Until(func() bool { return looks.Add(1) == 3 }, 10*time.Second, time.Millisecond))
	assert.Equal(t, int32(3), looks.Load())
	start := time.Now()
	assert.False(t, poll.Until(func() bool { return false }, 50*time.Millisecond, 10*time.Millisecond))
	assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond, "waited the whole deadline")
}

// A test on an injected clock steps it in its condition: the clock's
// timers fire as the looks go on, and real time only bounds the wait.
func TestEventuallyDrivesAnInjectedClock(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	fired := clk.After(time.Hour)
	poll.Eventually(t, func() bool {
		clk.Step(10 * time.Minute)
		select {
		case <-fired:
			return true
		default:
			return false
		}
	}, 10*time.Second, time.Millisecond, "an hour of the fake clock passed")
	assert.Equal(t, time.Hour, clk.Since(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)))
}
