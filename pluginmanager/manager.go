package pluginmanager

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"k8s.io/utils/clock"
)

// Handler takes the plugins of one type (the kubelet's PluginHandler).
type Handler interface {
	// ValidatePlugin says whether a plugin of this name and versions may
	// register (before anything is done with it).
	ValidatePlugin(name, endpoint string, versions []string) error
	// RegisterPlugin sets the plugin up; an error refuses it.
	RegisterPlugin(ctx context.Context, name, endpoint string, versions []string) error
	// DeRegisterPlugin undoes RegisterPlugin (the socket went away).
	DeRegisterPlugin(name, endpoint string)
}

// The kubelet's defaults.
const (
	// DefaultDirName is the registry directory's name below --root-dir.
	DefaultDirName = "plugins_registry"
	// DefaultReconcilePeriod is how often registrations are reconciled.
	DefaultReconcilePeriod = time.Second
	dialTimeout            = 10 * time.Second
	callTimeout            = 10 * time.Second
)

// Config configures a Manager.
type Config struct {
	// Dir is the registry directory, created if missing.
	Dir string
	// Handlers by plugin type (registerapi.CSIPlugin, ...).
	Handlers        map[string]Handler
	ReconcilePeriod time.Duration
	Clock           clock.WithTicker
	Log             logr.Logger
}

// Plugin is a registered plugin.
type Plugin struct {
	Type, Name, Endpoint, Socket string
	Versions                     []string
}

// Manager watches the registry directory and registers its plugins.
type Manager struct {
	cfg Config

	mu         sync.Mutex
	desired    map[string]time.Time // socket → when it was seen created
	registered map[string]registration
	failed     map[string]retry // sockets whose registration failed
}

// retry is a failed registration's back-off, the kubelet's operation
// executor's: 500ms doubling to 2m2s, for the socket seen at at.
type retry struct {
	at, next time.Time
	delay    time.Duration
}

const (
	initialRetryDelay = 500 * time.Millisecond
	maxRetryDelay     = 2*time.Minute + 2*time.Second
)

type registration struct {
	plugin  Plugin
	handler Handler
	at      time.Time // the desired timestamp it registered for
}

// New checks cfg and fills in the defaults.
func New(cfg Config) (*Manager, error) {
	if cfg.Dir == "" || !filepath.IsAbs(cfg.Dir) {
		return nil, fmt.Errorf("pluginmanager: Config.Dir: Invalid value: %q: must be an absolute path", cfg.Dir)
	}
	if cfg.ReconcilePeriod <= 0 {
		cfg.ReconcilePeriod = DefaultReconcilePeriod
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Manager{cfg: cfg, desired: map[string]time.Time{}, registered: map[string]registration{}, failed: map[string]retry{}}, nil
}

// Run watches and reconciles until ctx ends; at the end every registered
// plugin stays registered (the agent stops, not the plugins).
func (m *Manager) Run(ctx context.Context) error {
	if err := os.MkdirAll(m.cfg.Dir, 0o750); err != nil {
		return fmt.Errorf("pluginmanager: creating %s: %w", m.cfg.Dir, err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("pluginmanager: %w", err)
	}
	defer w.Close()
	if err := m.traverse(w, m.cfg.Dir); err != nil {
		return err
	}
	tick := m.cfg.Clock.NewTicker(m.cfg.ReconcilePeriod)
	defer tick.Stop()
	m.reconcile(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-w.Events:
			m.handle(w, ev)
		case err := <-w.Errors:
			m.cfg.Log.Error(err, "plugin registry watch")
		case <-tick.C():
			m.reconcile(ctx)
		}
	}
}

// handle is the kubelet's pluginwatcher: a created socket is desired (a
// created directory is watched), a removed one is not.
func (m *Manager) handle(w *fsnotify.Watcher, ev fsnotify.Event) {
	switch {
	case ev.Has(fsnotify.Create):
		fi, err := os.Stat(ev.Name)
		switch {
		case err != nil || strings.HasPrefix(filepath.Base(ev.Name), "."):
		case fi.IsDir():
			if err := m.traverse(w, ev.Name); err != nil {
				m.cfg.Log.Error(err, "plugin registry watch")
			}
		case fi.Mode()&fs.ModeSocket != 0:
			m.want(ev.Name)
		}
	case ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename):
		m.mu.Lock()
		delete(m.desired, ev.Name)
		delete(m.failed, ev.Name)
		m.mu.Unlock()
	}
}

// traverse watches dir and its subdirectories and takes their sockets.
func (m *Manager) traverse(w *fsnotify.Watcher, dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir {
				return fmt.Errorf("pluginmanager: %w", err)
			}
			return nil
		}
		if path != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case d.IsDir():
			if err := w.Add(path); err != nil {
				return fmt.Errorf("pluginmanager: watching %s: %w", path, err)
			}
		case d.Type()&fs.ModeSocket != 0:
			m.want(path)
		}
		return nil
	})
}

func (m *Manager) want(socket string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.desired[socket] = m.cfg.Clock.Now()
}

// reconcile deregisters the plugins whose socket is gone (or was created
// again) and registers the desired ones not registered.
func (m *Manager) reconcile(ctx context.Context) {
	m.mu.Lock()
	var gone []registration
	for socket, r := range m.registered {
		if at, ok := m.desired[socket]; !ok || at.After(r.at) {
			gone = append(gone, r)
			delete(m.registered, socket)
		}
	}
	var todo []string
	now := m.cfg.Clock.Now()
	for socket, at := range m.desired {
		if _, ok := m.registered[socket]; ok {
			continue
		}
		if f, ok := m.failed[socket]; ok && f.at.Equal(at) && now.Before(f.next) {
			continue // backing off; a socket created again is tried at once
		}
		todo = append(todo, socket)
	}
	m.mu.Unlock()
	for _, r := range gone {
		m.cfg.Log.Info("deregistering plugin", "type", r.plugin.Type, "name", r.plugin.Name, "socket", r.plugin.Socket)
		r.handler.DeRegisterPlugin(r.plugin.Name, r.plugin.Endpoint)
	}
	sort.Strings(todo)
	for _, socket := range todo {
		m.mu.Lock()
		at, ok := m.desired[socket]
		m.mu.Unlock()
		if !ok {
			continue
		}
		r, err := m.register(ctx, socket)
		m.mu.Lock()
		if err != nil {
			f := m.failed[socket]
			if !f.at.Equal(at) {
				f = retry{at: at}
			}
			f.delay = min(max(2*f.delay, initialRetryDelay), maxRetryDelay)
			f.next = m.cfg.Clock.Now().Add(f.delay)
			m.failed[socket] = f
			m.mu.Unlock()
			m.cfg.Log.Error(err, "plugin registration", "socket", socket, "retryIn", f.delay)
			continue
		}
		delete(m.failed, socket)
		r.at = at
		m.registered[socket] = r
		m.mu.Unlock()
		m.cfg.Log.Info("registered plugin", "type", r.plugin.Type, "name", r.plugin.Name, "endpoint", r.plugin.Endpoint)
	}
}

// register is the kubelet's GenerateRegisterPluginFunc.
func (m *Manager) register(ctx context.Context, socket string) (registration, error) {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return (&net.Dialer{Timeout: dialTimeout}).DialContext(ctx, "unix", socket)
		}))
	if err != nil {
		return registration{}, fmt.Errorf("RegisterPlugin error -- dial failed at socket %s, err: %w", socket, err)
	}
	defer conn.Close()
	client := registerapi.NewRegistrationClient(conn)
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	info, err := client.GetInfo(cctx, &registerapi.InfoRequest{})
	if err != nil {
		return registration{}, fmt.Errorf("RegisterPlugin error -- failed to get plugin info using RPC GetInfo at socket %s, err: %w", socket, err)
	}
	handler, ok := m.cfg.Handlers[info.Type]
	if !ok {
		msg := fmt.Sprintf("RegisterPlugin error -- no handler registered for plugin type: %s at socket %s", info.Type, socket)
		return registration{}, notify(ctx, client, false, msg)
	}
	if info.Endpoint == "" {
		info.Endpoint = socket
	}
	p := Plugin{Type: info.Type, Name: info.Name, Endpoint: info.Endpoint, Socket: socket, Versions: info.SupportedVersions}
	if err := handler.ValidatePlugin(p.Name, p.Endpoint, p.Versions); err != nil {
		return registration{}, notify(ctx, client, false, fmt.Sprintf("RegisterPlugin error -- plugin validation failed with err: %v", err))
	}
	if err := handler.RegisterPlugin(ctx, p.Name, p.Endpoint, p.Versions); err != nil {
		return registration{}, notify(ctx, client, false, fmt.Sprintf("RegisterPlugin error -- plugin registration failed with err: %v", err))
	}
	if err := notify(ctx, client, true, ""); err != nil {
		handler.DeRegisterPlugin(p.Name, p.Endpoint)
		return registration{}, fmt.Errorf("RegisterPlugin error -- failed to send registration status at socket %s, err: %w", socket, err)
	}
	return registration{plugin: p, handler: handler}, nil
}

// notify tells the plugin how its registration went; a failure's message
// is also the error returned.
func notify(ctx context.Context, client registerapi.RegistrationClient, registered bool, msg string) error {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := client.NotifyRegistrationStatus(cctx, &registerapi.RegistrationStatus{PluginRegistered: registered, Error: msg})
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", msg, err)
	case msg != "":
		return errors.New(msg)
	}
	return nil
}

// Registered lists the plugins registered now, by socket.
func (m *Manager) Registered() []Plugin {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Plugin, 0, len(m.registered))
	for _, r := range m.registered {
		out = append(out, r.plugin)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Socket < out[j].Socket })
	return out
}
