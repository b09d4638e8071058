package csitest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// identityServer is the driver's Identity service, which the external
// sidecars (provisioner, attacher, resizer) ask first.
type identityServer struct {
	csipb.UnimplementedIdentityServer
	d *Driver
}

func (s *identityServer) GetPluginInfo(context.Context, *csipb.GetPluginInfoRequest) (*csipb.GetPluginInfoResponse, error) {
	return &csipb.GetPluginInfoResponse{Name: s.d.cfg.Name, VendorVersion: "csitest"}, nil
}

func (s *identityServer) GetPluginCapabilities(context.Context, *csipb.GetPluginCapabilitiesRequest) (*csipb.GetPluginCapabilitiesResponse, error) {
	if !s.d.cfg.Controller {
		return &csipb.GetPluginCapabilitiesResponse{}, nil
	}
	return &csipb.GetPluginCapabilitiesResponse{Capabilities: []*csipb.PluginCapability{
		{Type: &csipb.PluginCapability_Service_{Service: &csipb.PluginCapability_Service{Type: csipb.PluginCapability_Service_CONTROLLER_SERVICE}}},
		{Type: &csipb.PluginCapability_VolumeExpansion_{VolumeExpansion: &csipb.PluginCapability_VolumeExpansion{
			Type: csipb.PluginCapability_VolumeExpansion_ONLINE}}},
	}}, nil
}

func (s *identityServer) Probe(context.Context, *csipb.ProbeRequest) (*csipb.ProbeResponse, error) {
	return &csipb.ProbeResponse{}, nil
}

// controllerServer is the Controller service of a driver with
// Config.Controller: volumes are directories under DataDir named by the
// request's name, "attached" by recording it, grown by recording the
// size (with node expansion required, so that the node's part runs too).
type controllerServer struct {
	csipb.UnimplementedControllerServer
	d *Driver
}

func (s *controllerServer) ControllerGetCapabilities(context.Context, *csipb.ControllerGetCapabilitiesRequest) (*csipb.ControllerGetCapabilitiesResponse, error) {
	var caps []*csipb.ControllerServiceCapability
	for _, t := range []csipb.ControllerServiceCapability_RPC_Type{csipb.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csipb.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME, csipb.ControllerServiceCapability_RPC_EXPAND_VOLUME} {
		caps = append(caps, &csipb.ControllerServiceCapability{Type: &csipb.ControllerServiceCapability_Rpc{
			Rpc: &csipb.ControllerServiceCapability_RPC{Type: t}}})
	}
	return &csipb.ControllerGetCapabilitiesResponse{Capabilities: caps}, nil
}

func (s *controllerServer) CreateVolume(_ context.Context, r *csipb.CreateVolumeRequest) (*csipb.CreateVolumeResponse, error) {
	if r.GetName() == "" || s.d.cfg.DataDir == "" {
		return nil, status.Error(codes.InvalidArgument, "a name and Config.DataDir are required")
	}
	if err := os.MkdirAll(filepath.Join(s.d.cfg.DataDir, r.GetName()), 0o750); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	s.d.record("create", r.GetName())
	v := &csipb.Volume{VolumeId: r.GetName(), CapacityBytes: r.GetCapacityRange().GetRequiredBytes()}
	if len(s.d.cfg.Topology) > 0 {
		v.AccessibleTopology = []*csipb.Topology{{Segments: s.d.cfg.Topology}}
	}
	return &csipb.CreateVolumeResponse{Volume: v}, nil
}

func (s *controllerServer) DeleteVolume(_ context.Context, r *csipb.DeleteVolumeRequest) (*csipb.DeleteVolumeResponse, error) {
	if err := os.RemoveAll(filepath.Join(s.d.cfg.DataDir, r.GetVolumeId())); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	s.d.record("delete", r.GetVolumeId())
	return &csipb.DeleteVolumeResponse{}, nil
}

func (s *controllerServer) ControllerPublishVolume(_ context.Context, r *csipb.ControllerPublishVolumeRequest) (*csipb.ControllerPublishVolumeResponse, error) {
	s.d.record("attach", r.GetVolumeId()+" "+r.GetNodeId())
	return &csipb.ControllerPublishVolumeResponse{PublishContext: map[string]string{"devicePath": "/dev/csitest-" + r.GetVolumeId()}}, nil
}

func (s *controllerServer) ControllerUnpublishVolume(_ context.Context, r *csipb.ControllerUnpublishVolumeRequest) (*csipb.ControllerUnpublishVolumeResponse, error) {
	s.d.record("detach", r.GetVolumeId()+" "+r.GetNodeId())
	return &csipb.ControllerUnpublishVolumeResponse{}, nil
}

func (s *controllerServer) ControllerExpandVolume(_ context.Context, r *csipb.ControllerExpandVolumeRequest) (*csipb.ControllerExpandVolumeResponse, error) {
	size := r.GetCapacityRange().GetRequiredBytes()
	s.d.record("controller-expand", fmt.Sprintf("%s %d", r.GetVolumeId(), size))
	return &csipb.ControllerExpandVolumeResponse{CapacityBytes: size, NodeExpansionRequired: true}, nil
}

func (s *controllerServer) ValidateVolumeCapabilities(_ context.Context, r *csipb.ValidateVolumeCapabilitiesRequest) (*csipb.ValidateVolumeCapabilitiesResponse, error) {
	return &csipb.ValidateVolumeCapabilitiesResponse{Confirmed: &csipb.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeCapabilities: r.GetVolumeCapabilities()}}, nil
}
