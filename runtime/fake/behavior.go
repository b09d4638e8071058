package fake

import (
	"fmt"
	"io"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

// Behavior decides what a container does, given its config at
// CreateContainer: the Program registered for its image, which can exit by
// itself after a while with some code, get OOM-killed, run until stopped,
// handle or ignore SIGTERM, print lines (written to the CRI log file when
// the sandbox has a log directory and the container a log path, and to
// attached clients), read lines from attached clients and answer exec'd
// commands. Nothing is executed. TestbinBehavior reproduces the project's
// test image (TestbinImage) mode by mode; other images default to
// DefaultBehavior.
//
// Like containerd, the runtime adds HOSTNAME (the sandbox's hostname) in
// front of cfg.Envs. A Behavior must not call the Runtime and must not
// modify cfg.
type Behavior func(cfg *runtimeapi.ContainerConfig) Program

// Program is what a container's process does. The zero Program runs until
// stopped and exits 0 on SIGTERM, printing nothing.
type Program struct {
	// Stdout and Stderr are the lines the program prints when it starts.
	Stdout, Stderr []string

	// Exits makes the program end by itself ExitAfter after it started
	// (at once for 0), with ExitCode.
	Exits     bool
	ExitAfter time.Duration
	ExitCode  int32
	// OOMKilled makes that end an OOM kill instead: exit code 137 and
	// reason "OOMKilled".
	OOMKilled bool

	// StopExitCode is the exit code after SIGTERM; 143 models a process
	// that dies of the signal.
	StopExitCode int32
	// StopStdout are the lines printed on SIGTERM.
	StopStdout []string
	// IgnoreSIGTERM makes StopContainer wait the whole grace period and
	// then SIGKILL (exit code 137). Real PID 1 processes without a signal
	// handler behave like this.
	IgnoreSIGTERM bool

	// StartError, if set, makes StartContainer fail with this message; the
	// container is then EXITED with code 128 and reason "StartError", as
	// in containerd when runc cannot start the process.
	StartError string

	// Exec runs an exec'd command, from ExecSync or a streaming Exec. Nil
	// answers every command with runc's "executable file not found".
	Exec func(cmd []string) ExecResult

	// Stdin, if set, receives each line (without its end of line) that an
	// attached client writes to the process, when the container's config
	// has Stdin. It is called outside the Runtime's locks, one line at a
	// time, and must not block.
	Stdin func(p Proc, line string)
	// StdinClosed, if set, is called once when the process's stdin closes:
	// with StdinOnce, when the first attached client's input ends.
	StdinClosed func(p Proc)

	// Run, if set, is called (outside the Runtime's locks) once the
	// container is running, for programs that do something real, such
	// as serve a port. It must not block. The returned function, if any,
	// is called once the container has exited or the Runtime is closed;
	// it may run inside a fake clock's Step, so it must not use the clock.
	Run func(p Proc) (cleanup func())
}

// ExecResult is what an exec'd command does: print Stdout and Stderr, run
// for Duration, exit with ExitCode; or, with Interactive, whatever that
// function does with the process's streams.
type ExecResult struct {
	Stdout, Stderr []byte
	ExitCode       int32
	// Duration is how long the command runs on the injected clock (after
	// Interactive, if set, has returned); a negative Duration never ends by
	// itself (only the exec timeout, the caller's context or the client
	// going away end it).
	Duration time.Duration
	// Interactive, if set, replaces Stdout, Stderr and ExitCode: it is the
	// process, reading s.Stdin, writing s.Stdout and s.Stderr and returning
	// the exit code. ExecSync gives it an empty Stdin and buffers; a
	// streaming Exec the client's streams. It must return once Stdin is
	// exhausted or fails (Runtime.Close ends a streaming client's input)
	// and must not use the clock.
	Interactive func(s ExecStreams) int32
	// Err fails the exec, as when the binary does not exist. A gRPC status
	// error is returned as-is; any other error is wrapped the way
	// containerd reports a failed exec start.
	Err error
}

// ExecStreams are an exec'd process's standard streams.
type ExecStreams struct {
	// Stdin is the client's input, an empty reader when there is none
	// (ExecSync, or an exec without stdin).
	Stdin io.Reader
	// Stdout and Stderr go to the client and may be written concurrently.
	// On a terminal (TTY) both are the terminal, as with runc: what is
	// written to Stderr comes out on Stdout, "\n" as "\r\n", and input is
	// echoed.
	Stdout, Stderr io.Writer
	// TTY reports whether the process runs on a terminal (exec -t).
	TTY bool
}

// Forever is an ExecResult.Duration for commands that never end.
const Forever time.Duration = -1

// Stream names a container output stream.
type Stream string

// Output streams, as written in CRI log files.
const (
	Stdout Stream = "stdout"
	Stderr Stream = "stderr"
)

// Proc lets a running Program act on its container.
type Proc struct {
	ContainerID string
	// HostNetwork is true when the sandbox uses the node's network.
	HostNetwork bool
	// PodIP is the sandbox IP; empty for host-network sandboxes.
	PodIP string
	// HostPorts reports WithHostPorts: whether the program may really
	// listen on loopback ports.
	HostPorts bool
	// Clock is the Runtime's clock, for programs that measure time.
	Clock clock.PassiveClock

	// Exit makes the container exit now with code, as if the process
	// ended; it does nothing once the container has exited.
	Exit func(code int32)
	// Print appends a line to the container's output: its log file and
	// attached clients.
	Print func(s Stream, line string)
	// Go runs f in a goroutine that Runtime.Close waits for; f must
	// return once cleanup has been called.
	Go func(f func())
}

// DefaultBehavior is used for images without a registered behaviour: the
// container runs until stopped, exits 0 on SIGTERM and has no binaries to
// exec.
func DefaultBehavior(*runtimeapi.ContainerConfig) Program { return Program{} }

// RunsUntilStopped returns a Program that prints stdout at start and runs
// until stopped, exiting 0 on SIGTERM.
func RunsUntilStopped(stdout ...string) Program { return Program{Stdout: stdout} }

// ExitsAfter returns a Program that exits by itself with code after d.
func ExitsAfter(d time.Duration, code int32) Program {
	return Program{Exits: true, ExitAfter: d, ExitCode: code}
}

// OOMKilledAfter returns a Program that the OOM killer kills after d.
func OOMKilledAfter(d time.Duration) Program {
	return Program{Exits: true, ExitAfter: d, OOMKilled: true}
}

// BehaviorOf returns a Behavior that gives every container p.
func BehaviorOf(p Program) Behavior {
	return func(*runtimeapi.ContainerConfig) Program { return p }
}

// ExecNotFound is the result of exec'ing a binary that is not in the
// image, worded like runc so that tests matching on it work against both.
func ExecNotFound(cmd []string) ExecResult {
	name := ""
	if len(cmd) > 0 {
		name = cmd[0]
	}
	return ExecResult{Err: fmt.Errorf("OCI runtime exec failed: exec failed: unable to start container process: %s: unknown", lookPathError(name))}
}

// lookPathError words a missing binary like Go's exec.LookPath in runc.
func lookPathError(name string) string {
	if strings.Contains(name, "/") {
		return fmt.Sprintf("exec: %q: stat %s: no such file or directory", name, name)
	}
	return fmt.Sprintf("exec: %q: executable file not found in $PATH", name)
}

// startNotFound is the StartError of a container whose command is not in
// the image.
func startNotFound(name string) string {
	return fmt.Sprintf("failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: %s: unknown", lookPathError(name))
}
