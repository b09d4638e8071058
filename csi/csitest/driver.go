// Package csitest serves a fake CSI driver for tests: the registration API
// a node-driver-registrar serves in <root-dir>/plugins_registry, and a
// node service (NodeGetInfo, NodeGetCapabilities, stage, publish and, with
// a Config.DataDir, NodeGetVolumeStats and NodeExpandVolume), both over
// unix sockets.
//
//	d, _ := csitest.Start(csitest.Config{Name: "fake.csi.example.com", RegistryDir: dir, NodeID: "node-1"})
//	defer d.Stop()
package csitest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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
	// DataDir holds each volume's data (<DataDir>/<volume ID>); set, the
	// driver stages volumes (STAGE_UNSTAGE_VOLUME) by bind-mounting that
	// directory on the staging path and publishes them by bind-mounting
	// the staging path on the target, as a real driver mounts (root
	// only). Empty: it does not stage, and publishes a volume by making
	// the target directory (no mount, no root needed).
	DataDir string
	// VolumeMountGroup makes it take the pod's fsGroup itself (the
	// VOLUME_MOUNT_GROUP capability).
	VolumeMountGroup bool
	// SingleNodeMultiWriter gives it the SINGLE_NODE_MULTI_WRITER
	// capability.
	SingleNodeMultiWriter bool
	// Controller serves the Controller service too (on the same socket,
	// with the Identity service the external sidecars ask): volumes made
	// as directories of DataDir, attached and grown by recording it.
	Controller bool
	// BlockDevice is the device (a loop device, say) it publishes every
	// block volume as, bind-mounted on the target file; empty: it refuses
	// block volumes.
	BlockDevice string
}

// Driver is a running fake driver.
type Driver struct {
	cfg      Config
	srvs     []*grpc.Server
	mu       sync.Mutex
	statuses []*registerapi.RegistrationStatus
	calls    []string
	publish  map[string]*csipb.NodePublishVolumeRequest
}

func (d *Driver) record(call, volume string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, call+" "+volume)
}

// Calls are the volume calls the driver served, in order ("publish
// vol-1"): stage, unstage, publish, unpublish and expand, and with a
// Controller create, delete, attach, detach and controller-expand.
func (d *Driver) Calls() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.calls...)
}

// PublishRequest is the last NodePublishVolume request of a volume (its
// context, secrets and capability), nil if none came.
func (d *Driver) PublishRequest(volumeID string) *csipb.NodePublishVolumeRequest {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.publish[volumeID]
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
	csipb.RegisterIdentityServer(node, &identityServer{d: d})
	if cfg.Controller {
		csipb.RegisterControllerServer(node, &controllerServer{d: d})
	}
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

func (n *nodeServer) NodeGetCapabilities(context.Context, *csipb.NodeGetCapabilitiesRequest) (*csipb.NodeGetCapabilitiesResponse, error) {
	var caps []*csipb.NodeServiceCapability
	add := func(t csipb.NodeServiceCapability_RPC_Type) {
		caps = append(caps, &csipb.NodeServiceCapability{Type: &csipb.NodeServiceCapability_Rpc{
			Rpc: &csipb.NodeServiceCapability_RPC{Type: t}}})
	}
	if n.d.cfg.DataDir != "" {
		add(csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
		add(csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS)
		add(csipb.NodeServiceCapability_RPC_EXPAND_VOLUME)
	}
	if n.d.cfg.VolumeMountGroup {
		add(csipb.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP)
	}
	if n.d.cfg.SingleNodeMultiWriter {
		add(csipb.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER)
	}
	return &csipb.NodeGetCapabilitiesResponse{Capabilities: caps}, nil
}

func (n *nodeServer) NodeStageVolume(_ context.Context, r *csipb.NodeStageVolumeRequest) (*csipb.NodeStageVolumeResponse, error) {
	if n.d.cfg.DataDir == "" || r.GetVolumeId() == "" || r.GetStagingTargetPath() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID and staging target path are required")
	}
	data := filepath.Join(n.d.cfg.DataDir, r.GetVolumeId())
	if err := os.MkdirAll(data, 0o750); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := bind(data, r.GetStagingTargetPath(), false); err != nil {
		return nil, err
	}
	n.d.record("stage", r.GetVolumeId())
	return &csipb.NodeStageVolumeResponse{}, nil
}

func (n *nodeServer) NodeUnstageVolume(_ context.Context, r *csipb.NodeUnstageVolumeRequest) (*csipb.NodeUnstageVolumeResponse, error) {
	if err := unbind(r.GetStagingTargetPath()); err != nil {
		return nil, err
	}
	n.d.record("unstage", r.GetVolumeId())
	return &csipb.NodeUnstageVolumeResponse{}, nil
}

func (n *nodeServer) NodePublishVolume(_ context.Context, r *csipb.NodePublishVolumeRequest) (*csipb.NodePublishVolumeResponse, error) {
	if r.GetVolumeId() == "" || r.GetTargetPath() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID and target path are required")
	}
	switch {
	case r.GetVolumeCapability().GetBlock() != nil:
		if err := n.publishBlock(r.GetTargetPath(), r.GetReadonly()); err != nil {
			return nil, err
		}
	case n.d.cfg.DataDir == "":
		if err := os.MkdirAll(r.GetTargetPath(), 0o750); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
	default:
		// From the staging path; an inline volume, not staged, from its
		// data directory directly.
		src := r.GetStagingTargetPath()
		if src == "" {
			src = filepath.Join(n.d.cfg.DataDir, r.GetVolumeId())
			if err := os.MkdirAll(src, 0o750); err != nil {
				return nil, status.Error(codes.Internal, err.Error())
			}
		}
		if err := os.MkdirAll(r.GetTargetPath(), 0o750); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		if err := bind(src, r.GetTargetPath(), r.GetReadonly()); err != nil {
			return nil, err
		}
	}
	n.d.record("publish", r.GetVolumeId())
	n.d.mu.Lock()
	if n.d.publish == nil {
		n.d.publish = map[string]*csipb.NodePublishVolumeRequest{}
	}
	n.d.publish[r.GetVolumeId()] = r
	n.d.mu.Unlock()
	return &csipb.NodePublishVolumeResponse{}, nil
}

func (n *nodeServer) NodeUnpublishVolume(_ context.Context, r *csipb.NodeUnpublishVolumeRequest) (*csipb.NodeUnpublishVolumeResponse, error) {
	if err := unbind(r.GetTargetPath()); err != nil {
		return nil, err
	}
	if err := os.Remove(r.GetTargetPath()); err != nil && !os.IsNotExist(err) {
		return nil, status.Error(codes.Internal, err.Error())
	}
	n.d.record("unpublish", r.GetVolumeId())
	return &csipb.NodeUnpublishVolumeResponse{}, nil
}

// publishBlock bind-mounts the BlockDevice on target, a file it makes.
func (n *nodeServer) publishBlock(target string, readOnly bool) error {
	if n.d.cfg.BlockDevice == "" {
		return status.Error(codes.InvalidArgument, "block volumes need Config.BlockDevice")
	}
	f, err := os.OpenFile(target, os.O_CREATE, 0o640)
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	f.Close()
	return bind(n.d.cfg.BlockDevice, target, readOnly)
}

// NodeExpandVolume records the call and the size asked for ("expand
// vol-1 2147483648"). A filesystem volume is a directory, with nothing to
// grow; a block one is the BlockDevice, which, when it is a loop device,
// grows to that size (its backing file, then the device's capacity).
func (n *nodeServer) NodeExpandVolume(_ context.Context, r *csipb.NodeExpandVolumeRequest) (*csipb.NodeExpandVolumeResponse, error) {
	if !mounted(r.GetVolumePath()) {
		return nil, status.Errorf(codes.NotFound, "volume %s is not published at %s", r.GetVolumeId(), r.GetVolumePath())
	}
	size := r.GetCapacityRange().GetRequiredBytes()
	if r.GetVolumeCapability().GetBlock() != nil {
		if err := growLoop(n.d.cfg.BlockDevice, size); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
	}
	n.d.record("expand", fmt.Sprintf("%s %d", r.GetVolumeId(), size))
	return &csipb.NodeExpandVolumeResponse{CapacityBytes: size}, nil
}

// growLoop grows loop device dev (/dev/loopN) to size bytes: its backing
// file first, then LOOP_SET_CAPACITY, as losetup -c does.
func growLoop(dev string, size int64) error {
	b, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "loop", "backing_file"))
	if err != nil {
		return fmt.Errorf("%s is not a loop device: %w", dev, err)
	}
	if err := os.Truncate(strings.TrimSpace(string(b)), size); err != nil {
		return err
	}
	f, err := os.Open(dev)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.IoctlSetInt(int(f.Fd()), unix.LOOP_SET_CAPACITY, 0)
}

// NodeGetVolumeStats reports the statfs figures of the filesystem a
// published volume is on, as csi-driver-host-path does.
func (n *nodeServer) NodeGetVolumeStats(_ context.Context, r *csipb.NodeGetVolumeStatsRequest) (*csipb.NodeGetVolumeStatsResponse, error) {
	if !mounted(r.GetVolumePath()) {
		return nil, status.Errorf(codes.NotFound, "volume %s is not published at %s", r.GetVolumeId(), r.GetVolumePath())
	}
	var st unix.Statfs_t
	if err := unix.Statfs(r.GetVolumePath(), &st); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	bs := st.Bsize
	return &csipb.NodeGetVolumeStatsResponse{Usage: []*csipb.VolumeUsage{
		{Unit: csipb.VolumeUsage_BYTES, Total: int64(st.Blocks) * bs, Available: int64(st.Bavail) * bs, Used: int64(st.Blocks-st.Bfree) * bs},
		{Unit: csipb.VolumeUsage_INODES, Total: int64(st.Files), Available: int64(st.Ffree), Used: int64(st.Files - st.Ffree)},
	}}, nil
}

// bind mounts src on dir unless something is mounted there (idempotent,
// as CSI asks).
func bind(src, dir string, readOnly bool) error {
	if mounted(dir) {
		return nil
	}
	if err := unix.Mount(src, dir, "", unix.MS_BIND, ""); err != nil {
		return status.Errorf(codes.Internal, "bind mount %s on %s: %v", src, dir, err)
	}
	if readOnly {
		if err := unix.Mount("", dir, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			return status.Errorf(codes.Internal, "read-only remount of %s: %v", dir, err)
		}
	}
	return nil
}

// unbind unmounts dir if it is mounted (idempotent).
func unbind(dir string) error {
	if !mounted(dir) {
		return nil
	}
	if err := unix.Unmount(dir, 0); err != nil {
		return status.Errorf(codes.Internal, "unmount %s: %v", dir, err)
	}
	return nil
}

// mounted: /proc/self/mountinfo lists dir as a mount point.
func mounted(dir string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == filepath.Clean(dir) {
			return true
		}
	}
	return false
}

func (n *nodeServer) NodeGetInfo(context.Context, *csipb.NodeGetInfoRequest) (*csipb.NodeGetInfoResponse, error) {
	r := &csipb.NodeGetInfoResponse{NodeId: n.d.cfg.NodeID, MaxVolumesPerNode: n.d.cfg.MaxVolumes}
	if len(n.d.cfg.Topology) > 0 {
		r.AccessibleTopology = &csipb.Topology{Segments: n.d.cfg.Topology}
	}
	return r, nil
}
