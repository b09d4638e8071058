package fake

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
)

// attachment is a client attached to a container's output. The Runtime
// queues lines under its lock; the client's goroutine writes them out, so
// a slow client never holds the Runtime up.
type attachment struct {
	mu    sync.Mutex
	lines []printed
	ended bool          // the container has exited
	wake  chan struct{} // capacity 1: something to take
}

type printed struct {
	s    Stream
	line string
}

func newAttachment() *attachment { return &attachment{wake: make(chan struct{}, 1)} }

func (a *attachment) push(s Stream, line string) {
	a.mu.Lock()
	a.lines = append(a.lines, printed{s, line})
	a.mu.Unlock()
	a.signal()
}

func (a *attachment) end() {
	a.mu.Lock()
	a.ended = true
	a.mu.Unlock()
	a.signal()
}

func (a *attachment) signal() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

func (a *attachment) take() ([]printed, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.lines
	a.lines = nil
	return l, a.ended
}

// Attach attaches to container id's process as containerd does: output
// from now on (no history) until the container exits or the client goes
// away. Input goes to Program.Stdin if the container has Stdin and it is
// still open, and is ignored otherwise. When the input ends, the process's
// stdin closes if the container has StdinOnce and the client no tty;
// otherwise the client detaches.
func (s streamRuntime) Attach(ctx context.Context, id string, in io.Reader, out, errOut io.WriteCloser, tty bool, _ <-chan remotecommand.TerminalSize) error {
	r := s.r
	untrack, ok := r.track()
	if !ok {
		return errClosed
	}
	defer untrack()
	markSession(ctx)

	a := newAttachment()
	r.mu.Lock()
	c, err := r.findContainerLocked(id)
	if err != nil {
		r.mu.Unlock()
		return fmt.Errorf("failed to find container %q in store: %w", id, err)
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		r.mu.Unlock()
		return fmt.Errorf("container is in %s state", runtimeapi.ContainerState_name[int32(c.state)])
	}
	if c.attached == nil {
		c.attached = map[*attachment]struct{}{}
	}
	c.attached[a] = struct{}{}
	cfg, prog, proc := c.cfg, c.prog, r.procLocked(c)
	stdinOpen := cfg.GetStdin() && !c.stdinClosed
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(c.attached, a)
		r.mu.Unlock()
	}()

	detached := make(chan struct{})
	if in != nil {
		// Input the process does not take is still read: unread input
		// would stall the connection's other streams.
		input := func() { _, _ = io.Copy(io.Discard, in) }
		if stdinOpen {
			input = func() {
				r.feedStdin(c, prog, proc, in, cfg.GetTty())
				if cfg.GetStdinOnce() && !tty {
					r.closeStdin(c, prog, proc)
				} else {
					close(detached)
				}
			}
		}
		if !r.goBackground(input) {
			return errClosed
		}
	}
	return r.attachOutput(ctx, a, out, errOut, cfg.GetTty(), detached)
}

// attachOutput writes a's lines to the client until the container exits,
// the client detaches or goes away, or the Runtime closes. A container
// with a tty has one output, the terminal.
func (r *Runtime) attachOutput(ctx context.Context, a *attachment, out, errOut io.Writer, tty bool, detached <-chan struct{}) error {
	stdout, stderr := orDiscard(out), orDiscard(errOut)
	if tty {
		stdout = crlfWriter{stdout}
		stderr = stdout
	}
	for {
		select {
		case <-a.wake:
		case <-detached:
			return nil
		case <-ctx.Done():
			return nil // the client went away
		case <-r.done:
			return errClosed
		}
		lines, ended := a.take()
		for _, l := range lines {
			w := stdout
			if l.s == Stderr {
				w = stderr
			}
			if _, err := io.WriteString(w, l.line+"\n"); err != nil {
				return nil // the client went away
			}
		}
		if ended {
			return nil
		}
	}
}

// feedStdin hands an attached client's input to the program line by line
// until it ends. On a tty, Enter's "\r" ends a line too and the terminal
// echoes the line, which thus is container output.
func (r *Runtime) feedStdin(c *container, prog Program, proc Proc, in io.Reader, tty bool) {
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 1<<20)
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		i := bytes.IndexByte(data, '\n')
		if tty {
			if j := bytes.IndexByte(data, '\r'); j >= 0 && (i < 0 || j < i) {
				i = j
			}
		}
		switch {
		case i >= 0:
			return i + 1, data[:i], nil
		case atEOF && len(data) > 0:
			return len(data), data, nil
		}
		return 0, nil, nil
	})
	for sc.Scan() {
		r.mu.RLock()
		open := c.state == runtimeapi.ContainerState_CONTAINER_RUNNING && !c.stdinClosed
		r.mu.RUnlock()
		if !open {
			continue // keep reading, for the connection's sake
		}
		line := sc.Text()
		if tty {
			r.printLine(c, Stdout, line)
		}
		if prog.Stdin != nil {
			prog.Stdin(proc, line)
		}
	}
	// A line too long for the scanner ends the input; drain the rest.
	_, _ = io.Copy(io.Discard, in)
}

// closeStdin closes a running container's stdin, once.
func (r *Runtime) closeStdin(c *container, prog Program, proc Proc) {
	r.mu.Lock()
	closing := c.state == runtimeapi.ContainerState_CONTAINER_RUNNING && !c.stdinClosed
	c.stdinClosed = true
	r.mu.Unlock()
	if closing && prog.StdinClosed != nil {
		prog.StdinClosed(proc)
	}
}
