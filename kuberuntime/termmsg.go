package kuberuntime

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/podpath"
)

// The kubelet's bounds on termination messages (pkg/kubelet/container).
const (
	// MaxContainerTerminationMessageLength is how much of the end of a
	// container's termination-message file becomes its message.
	MaxContainerTerminationMessageLength = 4 * 1024
	// MaxContainerTerminationMessageLogLength and ...LogLines bound the
	// message taken from the end of the log (FallbackToLogsOnError).
	MaxContainerTerminationMessageLogLength = 2 * 1024
	MaxContainerTerminationMessageLogLines  = 80
)

// reasonContainerCannotRun is the runtime's reason for a container whose
// process never started: it has no logs to fall back to.
const reasonContainerCannotRun = "ContainerCannotRun"

// terminationMessageMount is the kubelet's makeMounts for the termination
// message: an empty, world-writable file <RootDir>/pods/<uid>/containers/
// <name>/<8 hex digits> (random: one per container instance) mounted at
// the container's TerminationMessagePath. Without RootDir or a path,
// there is none.
func (m *Manager) terminationMessageMount(pod *v1.Pod, c *v1.Container) (*kc.Mount, error) {
	if m.cfg.RootDir == "" || c.TerminationMessagePath == "" {
		return nil, nil
	}
	dir, err := podpath.Layout{RootDir: m.cfg.RootDir}.PodContainerDir(pod.UID, c.Name)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("termination message: %w", err)
	}
	path := filepath.Join(dir, fmt.Sprintf("%08x", rand.Uint32()))
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("termination message: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("termination message: %w", err)
	}
	// As the kubelet: whatever the umask, any user of the container may
	// write it.
	if err := os.Chmod(path, 0o666); err != nil {
		return nil, fmt.Errorf("termination message: %w", err)
	}
	return &kc.Mount{HostPath: path, ContainerPath: c.TerminationMessagePath}, nil
}

// addTerminationMessage is the kubelet's toKubeContainerStatus for an
// exited container: the end of its termination-message file (found by its
// mount at the path recorded in its annotations), or, under
// FallbackToLogsOnError, when that is empty and the container failed, the
// end of its log, is appended to the runtime's message.
func addTerminationMessage(s *runtimeapi.ContainerStatus, cs *kc.ContainerStatus) {
	if cs.State != kc.ContainerStateExited {
		return
	}
	a := s.GetAnnotations()
	fallback := v1.TerminationMessagePolicy(a[kc.AnnotationTerminationMsgPolicy]) == v1.TerminationMessageFallbackToLogsOnError &&
		cs.ExitCode != 0 && cs.Reason != reasonContainerCannotRun
	msg, checkLogs := terminationMessage(s, a[kc.AnnotationTerminationMessagePath], fallback)
	if checkLogs {
		msg = lastLogMessages(s.GetLogPath())
	}
	if msg == "" {
		return
	}
	if cs.Message != "" {
		cs.Message += ": "
	}
	cs.Message += msg
}

// terminationMessage is the kubelet's getTerminationMessage: the last
// MaxContainerTerminationMessageLength bytes of the file mounted at path,
// and whether the log is to be read instead.
func terminationMessage(s *runtimeapi.ContainerStatus, path string, fallback bool) (string, bool) {
	if path == "" {
		return "", fallback
	}
	for _, mnt := range s.GetMounts() {
		if mnt.GetContainerPath() != path {
			continue
		}
		data, err := readTail(mnt.GetHostPath(), MaxContainerTerminationMessageLength)
		if errors.Is(err, os.ErrNotExist) {
			return "", fallback
		}
		if err != nil {
			return fmt.Sprintf("Error on reading termination log %s: %v", mnt.GetHostPath(), err), false
		}
		return string(data), fallback && len(data) == 0
	}
	return "", fallback
}

// readTail reads at most the last max bytes of the file.
func readTail(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	off := st.Size() - max
	if off < 0 {
		off = 0
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}

// logTailWindow is how much of the end of a log is read for its last
// lines: far more than the 80 lines' 2 KiB of messages that are kept.
const logTailWindow = 256 * 1024

// lastLogMessages is the kubelet's readLastStringFromContainerLogs: the
// messages of the log's last MaxContainerTerminationMessageLogLines CRI
// lines, of which the last MaxContainerTerminationMessageLogLength bytes.
func lastLogMessages(path string) string {
	data, err := readTail(path, logTailWindow)
	if err != nil {
		return fmt.Sprintf("Error on reading termination message from logs: %v", err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	if len(data) == logTailWindow && len(lines) > 0 {
		lines = lines[1:] // cut in the middle
	}
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	if len(lines) > MaxContainerTerminationMessageLogLines {
		lines = lines[len(lines)-MaxContainerTerminationMessageLogLines:]
	}
	var buf bytes.Buffer
	for _, line := range lines {
		// <time> <stream> <P|F> <message>: a partial line's message goes
		// on in the next one.
		f := strings.SplitN(line, " ", 4)
		if len(f) < 4 {
			continue
		}
		msg := f[3]
		if f[2] == "P" {
			msg = strings.TrimSuffix(msg, "\n")
		}
		buf.WriteString(msg)
	}
	out := buf.Bytes()
	if len(out) > MaxContainerTerminationMessageLogLength {
		out = out[len(out)-MaxContainerTerminationMessageLogLength:]
	}
	return string(out)
}
