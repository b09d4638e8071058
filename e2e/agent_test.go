//go:build integration

package e2e

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nodekit-dev/nodekit/cgroupmgr"
	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/testenv"
)

// agentProcess runs examples/kubelet as a process of its own, so that the
// test can kill it as a crash would, start it again on the same state, and
// measure its process alone.
type agentProcess struct {
	t       *testing.T
	bin     string
	logPath string
	healthz int
	args    func(nodeIP string) []string
	// foreign: not the reference agent (the real kubelet): args are
	// passed as they are, without the agent's own extra flags.
	foreign bool

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	nodeIP string
	starts int
}

// buildAgent builds examples/kubelet as the README says (-tags
// grpcnotrace): with -race when the test has it, else static as it ships
// (-race needs cgo).
func buildAgent(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "kubelet")
	args := []string{"build", "-tags", "grpcnotrace", "-o", bin}
	cgo := "CGO_ENABLED=0"
	if raceEnabled {
		args, cgo = append(args, "-race"), "CGO_ENABLED=1"
	}
	cmd := exec.Command("go", append(args, "./examples/kubelet")...)
	cmd.Dir = testenv.RepoRoot(t)
	cmd.Env = append(os.Environ(), cgo)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/kubelet: %v\n%s", err, out)
	}
	return bin
}

// freePort is a port on 127.0.0.1 nothing listens on now.
func freePort(t *testing.T) int { return freePorts(t, 1)[0] }

// freePorts returns n distinct ports on 127.0.0.1 nothing listens on now.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// start runs the agent with the node IP given, appending to its log, and
// waits until its /healthz answers.
func (a *agentProcess) start(nodeIP string) {
	a.t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd != nil {
		a.t.Fatalf("agent started twice")
	}
	log, err := os.OpenFile(a.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		a.t.Fatal(err)
	}
	a.starts++
	fmt.Fprintf(log, "==== start %d, --node-ip %s, %s\n", a.starts, nodeIP, time.Now().Format(time.RFC3339Nano))
	args := a.args(nodeIP)
	if !a.foreign {
		// Its /var/log/containers links beside its log, never the host's.
		args = append(args, "--containers-log-dir", filepath.Join(filepath.Dir(a.logPath), "containers"))
		if cgroupmgr.HostMode() != cgroupmgr.ModeV2 {
			args = append(args, "--fail-cgroupv1=false") // the kubelet's default refuses cgroup v1 hosts
		}
	}
	cmd := exec.Command(a.bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		a.t.Fatalf("starting the agent: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); log.Close(); close(exited) }()
	a.cmd, a.exited, a.nodeIP = cmd, exited, nodeIP
	url := "http://127.0.0.1:" + strconv.Itoa(a.healthz) + "/healthz"
	poll.Eventually(a.t, func() bool {
		select {
		case <-exited:
			a.t.Fatalf("agent start %d: exited before %s answered\n%s", a.starts, url, a.logTail(40))
		default:
		}
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 60*time.Second, 200*time.Millisecond, "agent start %d: %s ok\n%s", a.starts, url, func() string { return a.logTail(40) })
}

// stop ends the agent with sig (SIGKILL: a crash; SIGTERM: a stop) and
// waits for it to exit.
func (a *agentProcess) stop(sig syscall.Signal) {
	a.t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd == nil {
		return
	}
	_ = a.cmd.Process.Signal(sig)
	select {
	case <-a.exited:
	case <-time.After(60 * time.Second):
		_ = a.cmd.Process.Kill()
		<-a.exited
		a.t.Errorf("the agent did not exit within 60s of %v", sig)
	}
	a.cmd = nil
}

// alive says the agent runs (it did not exit on its own).
func (a *agentProcess) alive() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd == nil {
		return false
	}
	select {
	case <-a.exited:
		return false
	default:
		return true
	}
}

// pid is the running agent's process ID.
func (a *agentProcess) pid() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd == nil {
		a.t.Fatalf("agent not started")
	}
	return a.cmd.Process.Pid
}

// logText is the agent's whole log, every start's.
func (a *agentProcess) logText() string {
	b, _ := os.ReadFile(a.logPath)
	return string(b)
}

func (a *agentProcess) logTail(lines int) string {
	b, _ := os.ReadFile(a.logPath)
	all := bytes.Split(b, []byte("\n"))
	return string(bytes.Join(all[max(0, len(all)-lines):], []byte("\n")))
}
