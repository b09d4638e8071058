// Package poll is the tests' one way to wait for something that happens
// in the background: Eventually looks at a condition until it holds or a
// deadline passes, and fails the test with testify's message if it does
// not (Until only says whether it held). A test on an injected clock
// advances it in its condition (each look one step of the clock), so that
// real time only bounds the wait.
package poll

import (
	"fmt"
	"runtime"
	"time"

	"github.com/stretchr/testify/require"
)

// TestingT is the part of *testing.T (or B, or F) Eventually needs.
type TestingT interface {
	require.TestingT
	Helper()
}

// Eventually calls cond at once and then every tick (0: as often as the
// scheduler lets it) until it returns true; if waitFor passes first it fails the test and stops it (FailNow)
// with testify's "Condition never satisfied", how long it waited, and
// msgAndArgs (a message, or a format and its arguments; an argument that
// is a func() string is called then, for the state at the deadline). It is
// require.Eventually, except that cond runs on the caller's goroutine, one
// look at a time: it may use require itself, and none of it runs on after
// the test has ended.
func Eventually(t TestingT, cond func() bool, waitFor, tick time.Duration, msgAndArgs ...any) {
	t.Helper()
	if !Until(cond, waitFor, tick) {
		require.Fail(t, "Condition never satisfied", "after %s: %s", waitFor, message(msgAndArgs))
	}
}

// Until is Eventually without the failure: it reports whether cond held
// before waitFor passed, for a wait whose running out is a finding (a
// foreign agent that falls behind), not a failure.
func Until(cond func() bool, waitFor, tick time.Duration) bool {
	deadline := time.Now().Add(waitFor)
	for !cond() {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		if tick <= 0 {
			runtime.Gosched() // a busy look, for a goroutine about to wait on a fake clock
			continue
		}
		time.Sleep(min(tick, left))
	}
	return true
}

// message is msgAndArgs as testify spells it, or what was waited for.
func message(msgAndArgs []any) string {
	if len(msgAndArgs) == 0 {
		return "the condition"
	}
	if format, ok := msgAndArgs[0].(string); ok {
		if len(msgAndArgs) == 1 {
			return format
		}
		args := make([]any, len(msgAndArgs)-1)
		for i, a := range msgAndArgs[1:] {
			if f, ok := a.(func() string); ok {
				a = f()
			}
			args[i] = a
		}
		return fmt.Sprintf(format, args...)
	}
	return fmt.Sprint(msgAndArgs...)
}
