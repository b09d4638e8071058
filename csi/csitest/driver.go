// Package csitest serves a fake CSI driver for tests: the registration API
// a node-driver-registrar serves in <root-dir>/plugins_registry, and a
// node service answering NodeGetInfo (the rest, for now, unimplemented),
// both over unix sockets.
//
//	d, _ := csitest.Start(csitest.Config{Name: "fake.csi.example.com", RegistryDir: dir, NodeID: "node-1"})
//	defer d.Stop()
package csitest

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// Config describes the fake driver.
type Config struct {
	Name string
	// RegistryDir is the plugin registry the registration socket goes in;
	// the node service's socket goes in a directory of its own.
	RegistryDir string
	// EndpointDir holds the node service's socket (csi.sock).
	EndpointDir string
	NodeID      string
	MaxVolumes  int64
	Topology    map[string]string
	// Versions it supports (default 1.0.0).
	Versions []string
}

// Driver is a running fake driver.
type Driver struct {
	cfg      Config
	srvs     []*grpc.Server
	mu       sync.Mutex
	statuses []*registerapi.RegistrationStatus
}

// Start serves the driver; Stop removes its sockets, so a plugin manager
// deregisters it.
func Start(cfg Config) (*Driver, error) {
	if cfg.Name == "" || cfg.RegistryDir == "" || cfg.EndpointDir == "" {
		return nil, errors.New("csitest: Config.Name, RegistryDir and EndpointDir are required")
	}
	if len(cfg.Versions) == 0 {
		cfg.Versions = []string{"1.0.0"}
	}
	d := &Driver{cfg: cfg}
	node := grpc.NewServer()
	csipb.RegisterNodeServer(node, &nodeServer{d: d})
	if err := d.serve(node, d.Endpoint()); err != nil {
		return nil, err
	}
	reg := grpc.NewServer()
	registerapi.RegisterRegistrationServer(reg, &registrationServer{d: d})
	if err := d.serve(reg, d.RegistrationSocket()); err != nil {
		d.Stop()
		return nil, err
	}
	return d, nil
}

func (d *Driver) serve(s *grpc.Server, socket string) error {
	if err := os.MkdirAll(filepath.Dir(socket), 0o750); err != nil {
		return err
	}
	l, err := net.Listen("unix", socket)
	if err != nil {
		return err
	}
	d.srvs = append(d.srvs, s)
	go func() { _ = s.Serve(l) }()
	return nil
}

// Endpoint is the node service's socket.
func (d *Driver) Endpoint() string { return filepath.Join(d.cfg.EndpointDir, "csi.sock") }

// RegistrationSocket is the socket in the registry directory.
func (d *Driver) RegistrationSocket() string {
	return filepath.Join(d.cfg.RegistryDir, d.cfg.Name+"-reg.sock")
}

// Registered reports the last registration status the node agent sent.
func (d *Driver) Registered() (registered bool, errMsg string, told bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.statuses) == 0 {
		return false, "", false
	}
	s := d.statuses[len(d.statuses)-1]
	return s.PluginRegistered, s.Error, true
}

// Stop stops serving and removes the sockets (grpc's Stop closes the
// listeners, which removes them).
func (d *Driver) Stop() {
	for _, s := range d.srvs {
		s.Stop()
	}
}

type registrationServer struct {
	registerapi.UnimplementedRegistrationServer
	d *Driver
}

func (r *registrationServer) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: r.d.cfg.Name, Endpoint: r.d.Endpoint(),
		SupportedVersions: r.d.cfg.Versions}, nil
}

func (r *registrationServer) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	r.d.mu.Lock()
	defer r.d.mu.Unlock()
	r.d.statuses = append(r.d.statuses, s)
	return &registerapi.RegistrationStatusResponse{}, nil
}

type nodeServer struct {
	csipb.UnimplementedNodeServer
	d *Driver
}

func (n *nodeServer) NodeGetInfo(context.Context, *csipb.NodeGetInfoRequest) (*csipb.NodeGetInfoResponse, error) {
	r := &csipb.NodeGetInfoResponse{NodeId: n.d.cfg.NodeID, MaxVolumesPerNode: n.d.cfg.MaxVolumes}
	if len(n.d.cfg.Topology) > 0 {
		r.AccessibleTopology = &csipb.Topology{Segments: n.d.cfg.Topology}
	}
	return r, nil
}
