package fake

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// freePort returns a port that was free on ip a moment ago.
func freePort(t *testing.T, ip string) string {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	require.NoError(t, err)
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// httpGet returns the status code and body of GET url.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// serveOnHost runs testbin in a host-network pod with host ports on.
func serveOnHost(t *testing.T, r *Runtime, cfg *runtimeapi.ContainerConfig) (id, base string) {
	t.Helper()
	port := freePort(t, "127.0.0.1")
	cfg.Envs = append(cfg.Envs, &runtimeapi.KeyValue{Key: "PORT", Value: []byte(port)})
	pc := hostNetwork(podConfig("host-" + cfg.Metadata.Name))
	id = create(t, r, runPod(t, r, pc), pc, cfg)
	start(t, r, id)
	return id, "http://127.0.0.1:" + port
}

func TestTestbinServeHTTP(t *testing.T) {
	r, _ := newTest(t, WithHostPorts(true))
	id, base := serveOnHost(t, r, testbin("web"))
	node, err := os.Hostname()
	require.NoError(t, err)

	steps := []struct {
		path string
		code int
		body string
	}{
		{"/healthz", 200, "ok"},
		{"/readyz", 200, "ready"},
		{"/readyz/fail", 200, "ok"},
		{"/readyz", 503, "not ready"},
		{"/readyz/ok", 200, "ok"},
		{"/readyz", 200, "ready"},
		{"/healthz/fail", 200, "ok"},
		{"/healthz", 500, "unhealthy"},
		{"/healthz/ok", 200, "ok"},
		{"/healthz", 200, "ok"},
		{"/anything", 200, "hello from " + node}, // a host-network pod has the node's hostname
		{"/exit?code=x", 400, "bad code"},
		{"/exit?code=3", 200, "exiting with 3"},
	}
	for _, s := range steps {
		code, body := httpGet(t, base+s.path)
		assert.Equal(t, s.code, code, s.path)
		assert.Equal(t, s.body, body, s.path)
	}
	st := containerStatus(t, r, id)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st.State)
	assert.Equal(t, int32(3), st.ExitCode)
	_, err = net.Dial("tcp", base[len("http://"):])
	assert.Error(t, err, "the server is gone with the container")
}

func TestTestbinUnhealthyAfter(t *testing.T) {
	r, clk := newTest(t, WithHostPorts(true))
	cfg := testbin("web")
	cfg.Envs = []*runtimeapi.KeyValue{{Key: "UNHEALTHY_AFTER", Value: []byte("5s")}}
	id, base := serveOnHost(t, r, cfg)
	code, _ := httpGet(t, base+"/healthz")
	assert.Equal(t, 200, code)
	clk.Step(5 * time.Second)
	code, body := httpGet(t, base+"/healthz")
	assert.Equal(t, 500, code)
	assert.Equal(t, "unhealthy", body)

	_, err := r.StopContainer(context.Background(), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 10})
	require.NoError(t, err)
	assert.Equal(t, int32(0), containerStatus(t, r, id).ExitCode)
	_, err = net.Dial("tcp", base[len("http://"):])
	assert.Error(t, err, "stopped with the container")
}

func TestTestbinPortInUse(t *testing.T) {
	r, _ := newTest(t, WithHostPorts(true))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)

	cfg := testbin("web")
	cfg.Envs = []*runtimeapi.KeyValue{{Key: "PORT", Value: []byte(port)}}
	cfg.LogPath = "web.log"
	pc := hostNetwork(podConfig("p"))
	pc.LogDirectory = t.TempDir()
	id := create(t, r, runPod(t, r, pc), pc, cfg)
	start(t, r, id)
	st := containerStatus(t, r, id)
	assert.Equal(t, int32(1), st.ExitCode)
	lines := readLog(t, filepath.Join(pc.LogDirectory, "web.log"))
	require.Len(t, lines, 1)
	assert.Contains(t, lines[0], " stderr F testbin: listen tcp 127.0.0.1:"+port+": bind: address already in use")
}

func TestTestbinServesOnPodIP(t *testing.T) {
	const ip = "127.77.0.1"
	r, _ := newTest(t, WithHostPorts(true), WithPodIPs(func(int) string { return ip }))
	port := freePort(t, ip)
	cfg := testbin("web")
	cfg.Envs = []*runtimeapi.KeyValue{{Key: "PORT", Value: []byte(port)}}
	run(t, r, cfg)
	code, body := httpGet(t, "http://"+net.JoinHostPort(ip, port)+"/readyz")
	assert.Equal(t, 200, code)
	assert.Equal(t, "ready", body)
}

func TestTestbinGRPC(t *testing.T) {
	r, _ := newTest(t, WithHostPorts(true))
	id, base := serveOnHost(t, r, testbin("health", "grpc"))
	conn, err := grpc.NewClient(base[len("http://"):], grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	for svc, want := range map[string]healthpb.HealthCheckResponse_ServingStatus{
		"":         healthpb.HealthCheckResponse_SERVING,
		"ready":    healthpb.HealthCheckResponse_SERVING,
		"notready": healthpb.HealthCheckResponse_NOT_SERVING,
	} {
		resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		require.NoError(t, err, svc)
		assert.Equal(t, want, resp.Status, svc)
	}
	_, err = hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "other"})
	assert.Equal(t, codes.NotFound, status.Code(err))

	_, err = r.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 5})
	require.NoError(t, err)
}

func TestTestbinWithoutHostPorts(t *testing.T) {
	r, _ := newTest(t)
	port := freePort(t, "127.0.0.1")
	cfg := testbin("web")
	cfg.Envs = []*runtimeapi.KeyValue{{Key: "PORT", Value: []byte(port)}}
	pc := hostNetwork(podConfig("p"))
	id := create(t, r, runPod(t, r, pc), pc, cfg)
	start(t, r, id)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, containerStatus(t, r, id).State)
	_, err := net.Dial("tcp", "127.0.0.1:"+port)
	assert.Error(t, err, "nothing really listens unless WithHostPorts")
}

func TestTestbinArgv(t *testing.T) {
	tests := []struct {
		name          string
		command, args []string
		want          []string
	}{
		{"defaults", nil, nil, []string{"/testbin", "serve"}},
		{"args replace cmd", nil, []string{"sleep", "1"}, []string{"/testbin", "sleep", "1"}},
		{"command replaces both", []string{"/testbin", "echo"}, []string{"x"}, []string{"/testbin", "echo", "x"}},
		{"command alone", []string{"/testbin"}, nil, []string{"/testbin"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := testbinArgv(&runtimeapi.ContainerConfig{Command: tt.command, Args: tt.args})
			assert.Equal(t, tt.want, got)
		})
	}
	// "/testbin" alone serves, like the real binary without arguments.
	p := TestbinBehavior(&runtimeapi.ContainerConfig{Command: []string{"/testbin"}})
	assert.NotNil(t, p.Run)
	assert.False(t, p.Exits)
}

func TestTestbinTerminalModes(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		tty, stdin bool
		state      runtimeapi.ContainerState
		code       int32
		log        string
	}{
		{"tty on a terminal", []string{"tty"}, true, false, runtimeapi.ContainerState_CONTAINER_EXITED, 0, "stdout F /dev/pts/0"},
		{"tty without", []string{"tty"}, false, false, runtimeapi.ContainerState_CONTAINER_EXITED, 1, "stdout F not a tty"},
		{"cat without stdin", []string{"cat"}, false, false, runtimeapi.ContainerState_CONTAINER_EXITED, 0, ""},
		{"cat waits for stdin", []string{"cat"}, false, true, runtimeapi.ContainerState_CONTAINER_RUNNING, 0, ""},
	}
	r, _ := newTest(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testbin("c", tt.args...)
			cfg.Tty, cfg.Stdin, cfg.LogPath = tt.tty, tt.stdin, "c.log"
			pc := podConfig(strings.ReplaceAll(tt.name, " ", "-"))
			pc.LogDirectory = t.TempDir()
			id := create(t, r, runPod(t, r, pc), pc, cfg)
			start(t, r, id)
			st := containerStatus(t, r, id)
			assert.Equal(t, tt.state, st.State)
			assert.Equal(t, tt.code, st.ExitCode)
			logged := strings.Join(readLog(t, filepath.Join(pc.LogDirectory, "c.log")), "\n")
			if tt.log == "" {
				assert.Empty(t, logged)
				return
			}
			assert.Contains(t, logged, tt.log)
			assert.NotContains(t, logged, "\n", "one line")
		})
	}
}
