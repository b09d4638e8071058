package kuberuntime

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestBackoffCrashLoop(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	b := NewBackoff(clk, 10*time.Second, 300*time.Second)
	const key = "k"

	// First failure: no entry yet, so the restart is immediate.
	exit := clk.Now()
	assert.False(t, b.IsInBackOffSince(key, exit))
	b.Next(key, exit)
	assert.Equal(t, 10*time.Second, b.Get(key))

	// Second failure right away: wait 10s after it.
	exit = clk.Now()
	assert.True(t, b.IsInBackOffSince(key, exit))
	clk.Step(9 * time.Second)
	assert.True(t, b.IsInBackOffSince(key, exit))
	clk.Step(time.Second)
	assert.False(t, b.IsInBackOffSince(key, exit))
	b.Next(key, exit)
	assert.Equal(t, 20*time.Second, b.Get(key))

	// Doubling caps at 5m.
	for i := 0; i < 10; i++ {
		b.Next(key, clk.Now())
	}
	assert.Equal(t, 300*time.Second, b.Get(key))

	// Running fine for more than twice the max resets the delay.
	clk.Step(601 * time.Second)
	exit = clk.Now()
	assert.False(t, b.IsInBackOffSince(key, exit))
	b.Next(key, exit)
	assert.Equal(t, 10*time.Second, b.Get(key))

	clk.Step(601 * time.Second)
	b.GC()
	assert.Equal(t, time.Duration(0), b.Get(key), "GC forgets idle entries")
}

func TestExpandVars(t *testing.T) {
	vars := map[string]string{"A": "1", "B": "two"}
	for in, want := range map[string]string{
		"plain":       "plain",
		"$(A)":        "1",
		"x$(A)y$(B)z": "x1ytwoz",
		"$(C)":        "$(C)",
		"$$(A)":       "$(A)",
		"$A":          "$A",
		"$(A":         "$(A",
		"a$":          "a$",
	} {
		assert.Equal(t, want, expandVars(in, vars), in)
	}
}

func TestDefaultPullPolicy(t *testing.T) {
	for img, want := range map[string]string{
		"busybox": "Always", "busybox:latest": "Always", "busybox:1.36": "IfNotPresent",
		"localhost:5000/x": "Always", "localhost:5000/x:2": "IfNotPresent",
		"nodekit.local/testbin:1": "IfNotPresent", "x@sha256:abc": "IfNotPresent",
	} {
		assert.Equal(t, want, string(DefaultPullPolicy(img)), img)
	}
}
