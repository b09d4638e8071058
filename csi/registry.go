package csi

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	utilversion "k8s.io/apimachinery/pkg/util/version"
)

// NodeInfo records a node's CSI drivers in the API (the kubelet's node
// info manager); *nodeinfo.Manager implements it.
type NodeInfo interface {
	InstallDriver(ctx context.Context, driver string, info DriverInfo) error
	UninstallDriver(ctx context.Context, driver string) error
}

// DefaultTimeout bounds the calls registration makes (the kubelet's
// csiTimeout).
const DefaultTimeout = 2 * time.Minute

// RegistryConfig configures a Registry.
type RegistryConfig struct {
	// NodeInfo records the drivers; nil records nothing (standalone).
	NodeInfo NodeInfo
	Timeout  time.Duration
	Log      logr.Logger
}

type driver struct {
	endpoint string
	version  *utilversion.Version
	client   *Client
}

// Registry is the node's registered CSI drivers: the kubelet's CSI
// RegistrationHandler and its drivers store.
type Registry struct {
	cfg     RegistryConfig
	mu      sync.Mutex
	drivers map[string]driver
}

// NewRegistry fills in cfg's defaults.
func NewRegistry(cfg RegistryConfig) *Registry {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	return &Registry{cfg: cfg, drivers: map[string]driver{}}
}

// ValidatePlugin checks a driver's versions.
func (r *Registry) ValidatePlugin(name, endpoint string, versions []string) error {
	if _, err := r.validateVersions("ValidatePlugin", name, versions); err != nil {
		return fmt.Errorf("validation failed for CSI Driver %s at endpoint %s: %w", name, endpoint, err)
	}
	return nil
}

// validateVersions is the kubelet's: one version of the 1.x family, and
// higher than a driver of the same name already registered.
func (r *Registry) validateVersions(caller, name string, versions []string) (*utilversion.Version, error) {
	if len(versions) == 0 {
		return nil, fmt.Errorf("%s for CSI driver %q failed. Plugin returned an empty list for supported versions", caller, name)
	}
	v, err := utilversion.HighestSupportedVersion(versions)
	if err != nil {
		return nil, fmt.Errorf("%s for CSI driver %q failed. None of the versions specified %q are supported. err=%w", caller, name, versions, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.drivers[name]; ok && !old.version.LessThan(v) {
		return nil, fmt.Errorf("%s for CSI driver %q failed. Another driver with the same name is already registered with a higher supported version: %q", caller, name, old.version)
	}
	return v, nil
}

// RegisterPlugin registers a driver: NodeGetInfo, then NodeInfo records
// it; a failure leaves it unregistered.
func (r *Registry) RegisterPlugin(ctx context.Context, name, endpoint string, versions []string) error {
	v, err := r.validateVersions("RegisterPlugin", name, versions)
	if err != nil {
		return err
	}
	c, err := Dial(endpoint)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	info, err := c.NodeGetInfo(ctx)
	if err == nil && info.NodeID == "" {
		err = errors.New("error adding CSI driver node info: driverNodeID must not be empty")
	}
	if err == nil && r.cfg.NodeInfo != nil {
		err = r.cfg.NodeInfo.InstallDriver(ctx, name, info)
	}
	if err != nil {
		_ = c.Close()
		return fmt.Errorf("CSI driver %s: %w", name, err)
	}
	r.mu.Lock()
	old, had := r.drivers[name]
	r.drivers[name] = driver{endpoint: endpoint, version: v, client: c}
	r.mu.Unlock()
	if had {
		_ = old.client.Close()
	}
	r.cfg.Log.Info("CSI driver registered", "driver", name, "endpoint", endpoint, "nodeID", info.NodeID, "version", v.String())
	return nil
}

// DeRegisterPlugin forgets a driver and uninstalls it from the node's
// records.
func (r *Registry) DeRegisterPlugin(name, endpoint string) {
	r.mu.Lock()
	d, ok := r.drivers[name]
	if ok && d.endpoint == endpoint {
		delete(r.drivers, name)
	}
	r.mu.Unlock()
	if !ok || d.endpoint != endpoint {
		return
	}
	_ = d.client.Close()
	if r.cfg.NodeInfo != nil {
		ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout)
		defer cancel()
		if err := r.cfg.NodeInfo.UninstallDriver(ctx, name); err != nil {
			r.cfg.Log.Error(err, "uninstalling CSI driver", "driver", name)
		}
	}
}

// Client is a registered driver's client, or an error naming the
// drivers registered.
func (r *Registry) Client(name string) (*Client, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d, ok := r.drivers[name]; ok {
		return d.client, nil
	}
	names := make([]string, 0, len(r.drivers))
	for n := range r.drivers {
		names = append(names, n)
	}
	sort.Strings(names)
	return nil, fmt.Errorf("driver name %s not found in the list of registered CSI drivers [%s]", name, strings.Join(names, " "))
}

// Drivers are the registered drivers' names.
func (r *Registry) Drivers() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.drivers))
	for n := range r.drivers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Close closes the registered drivers' connections (the agent stops; the
// drivers stay registered with the node).
func (r *Registry) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range r.drivers {
		_ = d.client.Close()
	}
}
