package pluginmanager_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/pluginmanager"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakePlugin serves pluginregistration v1 on a socket.
type fakePlugin struct {
	registerapi.UnimplementedRegistrationServer
	info     registerapi.PluginInfo
	mu       sync.Mutex
	statuses []*registerapi.RegistrationStatus
	srv      *grpc.Server
}

func (p *fakePlugin) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &p.info, nil
}

func (p *fakePlugin) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.statuses = append(p.statuses, s)
	return &registerapi.RegistrationStatusResponse{}, nil
}

func (p *fakePlugin) last() *registerapi.RegistrationStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.statuses) == 0 {
		return nil
	}
	return p.statuses[len(p.statuses)-1]
}

func servePlugin(t *testing.T, socket, typ, name string) *fakePlugin {
	t.Helper()
	l, err := net.Listen("unix", socket)
	require.NoError(t, err)
	p := &fakePlugin{info: registerapi.PluginInfo{Type: typ, Name: name, SupportedVersions: []string{"1.0.0"}}, srv: grpc.NewServer()}
	registerapi.RegisterRegistrationServer(p.srv, p)
	go func() { _ = p.srv.Serve(l) }()
	t.Cleanup(p.srv.Stop)
	return p
}

// handler records registrations; validate, if set, refuses.
type handler struct {
	mu       sync.Mutex
	plugins  map[string]string // name → endpoint
	validate error
}

func (h *handler) ValidatePlugin(string, string, []string) error { return h.validate }

func (h *handler) RegisterPlugin(_ context.Context, name, endpoint string, _ []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.plugins[name] = endpoint
	return nil
}

func (h *handler) DeRegisterPlugin(name, _ string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.plugins, name)
}

func (h *handler) has(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.plugins[name]
	return ok
}

func TestPluginRegistration(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "plugins_registry")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o750))
	early := servePlugin(t, filepath.Join(dir, "early.sock"), registerapi.CSIPlugin, "early.csi.example.com")
	csi := &handler{plugins: map[string]string{}}
	refusing := &handler{plugins: map[string]string{}, validate: errors.New("unsupported versions")}
	clk := clocktesting.NewFakeClock(time.Unix(1700000000, 0))
	// Each look steps the clock by a reconcile period: time passes only
	// as the test waits.
	until := func(cond func() bool, msg string) {
		t.Helper()
		poll.Eventually(t, func() bool { clk.Step(20 * time.Millisecond); return cond() }, 10*time.Second, 5*time.Millisecond, msg)
	}
	m, err := pluginmanager.New(pluginmanager.Config{Dir: dir, ReconcilePeriod: 20 * time.Millisecond, Clock: clk,
		Handlers: map[string]pluginmanager.Handler{registerapi.CSIPlugin: csi, registerapi.DevicePlugin: refusing}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); assert.NoError(t, <-done) }()

	until(func() bool { return csi.has("early.csi.example.com") }, "a socket there at start")
	until(func() bool { s := early.last(); return s != nil && s.PluginRegistered }, "told it")

	late := servePlugin(t, filepath.Join(dir, "sub", "late.sock"), registerapi.CSIPlugin, "late.csi.example.com")
	until(func() bool { return csi.has("late.csi.example.com") }, "a socket created later, in a subdirectory")
	assert.Equal(t, filepath.Join(dir, "sub", "late.sock"), csi.plugins["late.csi.example.com"], "the socket is the endpoint when GetInfo names none")
	until(func() bool { s := late.last(); return s != nil && s.PluginRegistered }, "told it")

	dra := servePlugin(t, filepath.Join(dir, "dra.sock"), registerapi.DRAPlugin, "dra.example.com")
	device := servePlugin(t, filepath.Join(dir, "device.sock"), registerapi.DevicePlugin, "device.example.com")
	hidden := servePlugin(t, filepath.Join(dir, ".hidden.sock"), registerapi.CSIPlugin, "hidden.csi.example.com")
	until(func() bool { s := dra.last(); return s != nil && !s.PluginRegistered }, "a type without a handler is refused")
	assert.Contains(t, dra.last().Error, "RegisterPlugin error -- no handler registered for plugin type: DRAPlugin")
	refused := clk.Now()
	until(func() bool { dra.mu.Lock(); defer dra.mu.Unlock(); return len(dra.statuses) >= 2 }, "tried again")
	// Seen some steps after it failed: well past a reconcile period (20ms),
	// as the kubelet's first back-off (500ms) wants.
	assert.Greater(t, clk.Since(refused), 300*time.Millisecond, "backed off, not retried at every reconcile")
	until(func() bool { s := device.last(); return s != nil && !s.PluginRegistered }, "validation refuses")
	assert.Equal(t, "RegisterPlugin error -- plugin validation failed with err: unsupported versions", device.last().Error)
	assert.Nil(t, hidden.last(), "a dot-file is not a plugin")
	assert.Len(t, m.Registered(), 2)

	require.NoError(t, os.Remove(filepath.Join(dir, "early.sock")))
	until(func() bool { return !csi.has("early.csi.example.com") }, "deregistered when its socket goes")
	assert.True(t, csi.has("late.csi.example.com"))
}

func TestNewChecksDir(t *testing.T) {
	_, err := pluginmanager.New(pluginmanager.Config{Dir: "relative"})
	assert.ErrorContains(t, err, `Config.Dir: Invalid value: "relative": must be an absolute path`)
}
