package prober

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/prober/probe"
)

// targetEnv makes the test binary a plain HTTP server on loopback, so the
// target's CPU is not counted as the prober's.
const targetEnv = "NODEKIT_PROBE_TARGET"

// serveTarget runs in the child: it prints its port and serves until stdin closes.
func serveTarget() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(l.Addr().(*net.TCPAddr).Port)
	go func() {
		_, _ = bufio.NewReader(os.Stdin).ReadByte() // parent gone or done
		os.Exit(0)
	}()
	_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
}

// startTarget starts the child server and returns its port.
func startTarget(b *testing.B) int {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), targetEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatalf("target server: %v", err)
	}
	port, err := strconv.Atoi(line[:len(line)-1])
	if err != nil {
		b.Fatalf("target server said %q", line)
	}
	return port
}

// countingStatuses counts status reads: one per worker period, so one per
// probe when every container is running (the default Runner must stay in
// place for the batch engine, so the probes are not counted there).
type countingStatuses struct {
	*statuses
	n atomic.Int64
}

func (c *countingStatuses) Get(uid types.UID) (*kc.PodStatus, error) {
	c.n.Add(1)
	return c.statuses.Get(uid)
}

// cpuTime is this process's CPU time so far: in user space (the prober's
// own work) and in the kernel (sockets and loopback TCP, much of the
// target's side included: loopback delivers packets in the sender's
// context). The kernel's share depends on the machine more than the code.
func cpuTime() (user, sys time.Duration) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// BenchmarkManyWorkers: 10,000 HTTP readiness workers with a 1 s period
// against one loopback server in a child process. Each op is one second of
// probing; it reports probes/s achieved and the prober's CPU seconds per
// 1,000 probes (this process only).
//
// engine=batch is the default Runner, whose plain-HTTP probes go through
// probe.Batch; engine=goroutine wraps the same handlers in another Runner,
// which makes every probe run on a goroutine of its own (the path exec,
// gRPC and https probes take).
func BenchmarkManyWorkers(b *testing.B) {
	b.Run("engine=batch", func(b *testing.B) { benchmarkManyWorkers(b, nil) })
	b.Run("engine=goroutine", func(b *testing.B) { benchmarkManyWorkers(b, struct{ Runner }{NewRunner(nil)}) })
}

func benchmarkManyWorkers(b *testing.B, runner Runner) {
	workers := 10000
	if raceDetector {
		workers /= 10
		b.Logf("race detector on: %d workers, not 10,000; figures only from runs without -race", workers)
	}
	port := startTarget(b)
	st := &countingStatuses{statuses: &statuses{m: map[types.UID]*kc.PodStatus{}}}
	m, err := New(Config{Statuses: st, Runner: runner})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	go func() { // consume readiness changes, as an agent would
		for {
			select {
			case <-m.Readiness().Updates():
			case <-done:
				return
			}
		}
	}()
	defer func() { cancel(); <-done }()
	started := time.Now().Add(-time.Hour)
	for i := 0; i < workers; i++ {
		uid := types.UID("pod-" + strconv.Itoa(i))
		st.set(uid, "c", "id-"+strconv.Itoa(i), kc.ContainerStateRunning, started, 0)
		st.m[uid].IPs = []string{"127.0.0.1"} // where the target listens
		m.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: string(uid), Namespace: "bench", UID: uid},
			Spec: v1.PodSpec{HostNetwork: true, Containers: []v1.Container{{Name: "c", ReadinessProbe: &v1.Probe{
				ProbeHandler:  v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(int32(port))}},
				PeriodSeconds: 1, TimeoutSeconds: 1}}}}})
	}
	time.Sleep(1500 * time.Millisecond) // let the jittered first round spread out
	b.ResetTimer()
	user0, sys0 := cpuTime()
	n0, t0 := st.n.Load(), time.Now()
	for i := 0; i < b.N; i++ {
		time.Sleep(time.Second)
	}
	user1, sys1 := cpuTime()
	user, sys, probes, elapsed := user1-user0, sys1-sys0, st.n.Load()-n0, time.Since(t0)
	b.StopTimer()
	if probes == 0 {
		b.Fatal("no probes ran")
	}
	ready := 0
	for i := 0; i < workers; i++ {
		if r, ok := m.Readiness().Get("id-" + strconv.Itoa(i)); ok && r == probe.Success {
			ready++
		}
	}
	if ready < workers*99/100 {
		b.Fatalf("only %d of %d containers ready: probes are failing", ready, workers)
	}
	b.ReportMetric(float64(probes)/elapsed.Seconds(), "probes/s")
	b.ReportMetric((user+sys).Seconds()/float64(probes)*1000, "cpu-s/1000probes")
	b.ReportMetric(user.Seconds()/float64(probes)*1000, "user-s/1000probes")
	b.ReportMetric(sys.Seconds()/float64(probes)*1000, "sys-s/1000probes")
}
