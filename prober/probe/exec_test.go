package probe

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// fakeExec returns canned output and error and records the timeout.
type fakeExec struct {
	stdout, stderr string
	err            error
	gotTimeout     time.Duration
}

func (f *fakeExec) ExecSync(_ context.Context, _ string, _ []string, timeout time.Duration) ([]byte, []byte, error) {
	f.gotTimeout = timeout
	return []byte(f.stdout), []byte(f.stderr), f.err
}

// exitError is how CRI clients report a non-zero exit.
type exitError struct{ code int }

func (e exitError) Error() string {
	return fmt.Sprintf("command terminated with non-zero exit code %d", e.code)
}
func (e exitError) ExitStatus() int { return e.code }

func TestExec(t *testing.T) {
	cmd := []string{"/bin/check", "--deep"}
	big := strings.Repeat("o", maxOutput)
	for _, tc := range []struct {
		name    string
		exec    fakeExec
		want    Result
		message string
		err     bool
	}{
		{name: "exit 0", exec: fakeExec{stdout: "fine\n", stderr: "warn\n"}, want: Success, message: "fine\nwarn\n"},
		{name: "exit 1 with output", exec: fakeExec{stdout: "out ", stderr: "exiting with 1", err: exitError{1}}, want: Failure, message: "out exiting with 1"},
		{name: "wrapped exit 2", exec: fakeExec{stderr: "bad", err: fmt.Errorf("exec: %w", exitError{2})}, want: Failure, message: "bad"},
		{name: "exit error with status 0", exec: fakeExec{stdout: "ok", err: exitError{0}}, want: Success, message: "ok"},
		{name: "grpc deadline", exec: fakeExec{err: status.Error(codes.DeadlineExceeded, "took too long")}, want: Failure, message: `command "/bin/check --deep" timed out`},
		{name: "context deadline", exec: fakeExec{err: fmt.Errorf("exec: %w", context.DeadlineExceeded)}, want: Failure, message: `command "/bin/check --deep" timed out`},
		{name: "other error", exec: fakeExec{err: errors.New("container not found")}, want: Unknown, err: true},
		{name: "grpc unavailable", exec: fakeExec{err: status.Error(codes.Unavailable, "runtime down")}, want: Unknown, err: true},
		{name: "output capped", exec: fakeExec{stdout: big, stderr: "dropped"}, want: Success, message: big},
		{name: "stderr capped", exec: fakeExec{stdout: "a", stderr: big}, want: Success, message: "a" + big[1:]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, msg, err := Exec(context.Background(), &tc.exec, "c1", cmd, 3*time.Second)
			if tc.err {
				assert.Error(t, err)
			} else {
				assert.NoError(t, err)
			}
			assert.Equal(t, tc.want, res)
			assert.Equal(t, tc.message, msg)
			assert.Equal(t, 3*time.Second, tc.exec.gotTimeout)
		})
	}
}

func TestExecDefaultTimeout(t *testing.T) {
	f := &fakeExec{}
	_, _, _ = Exec(context.Background(), f, "c1", []string{"true"}, 0)
	assert.Equal(t, DefaultTimeout, f.gotTimeout)
}
