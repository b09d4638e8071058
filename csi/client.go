package csi

import (
	"context"
	"fmt"
	"net"
	"strings"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Client talks to one CSI driver's node service over its unix socket.
type Client struct {
	conn *grpc.ClientConn
	node csipb.NodeClient
}

// Dial connects to a driver's endpoint: a socket path, or
// unix:///path as drivers name it. The connection is made lazily, by the
// first call.
func Dial(endpoint string) (*Client, error) {
	path := strings.TrimPrefix(endpoint, "unix://")
	if path == "" || !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("csi: endpoint %q: want a unix socket's absolute path", endpoint)
	}
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		}))
	if err != nil {
		return nil, fmt.Errorf("csi: %w", err)
	}
	return &Client{conn: conn, node: csipb.NewNodeClient(conn)}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// DriverInfo is what a driver says of this node (NodeGetInfo).
type DriverInfo struct {
	NodeID string
	// MaxVolumes is how many volumes it can publish here; 0: no limit.
	MaxVolumes int64
	// Topology is its accessible topology's segments (node labels).
	Topology map[string]string
}

// NodeGetInfo asks the driver who this node is to it.
func (c *Client) NodeGetInfo(ctx context.Context) (DriverInfo, error) {
	r, err := c.node.NodeGetInfo(ctx, &csipb.NodeGetInfoRequest{})
	if err != nil {
		return DriverInfo{}, err
	}
	info := DriverInfo{NodeID: r.GetNodeId(), MaxVolumes: r.GetMaxVolumesPerNode()}
	if t := r.GetAccessibleTopology(); t != nil {
		info.Topology = t.GetSegments()
	}
	return info, nil
}

// NodeCapabilities are the node service capabilities a driver has that
// change what the node does.
type NodeCapabilities struct {
	// StageUnstage: volumes are staged (NodeStageVolume) before they are
	// published.
	StageUnstage bool
	// VolumeMountGroup: the driver applies the pod's fsGroup itself,
	// given as the volume mount group.
	VolumeMountGroup bool
	// GetVolumeStats: NodeGetVolumeStats reports a volume's usage.
	GetVolumeStats bool
	// ExpandVolume: NodeExpandVolume grows a volume on the node.
	ExpandVolume bool
	// SingleNodeMultiWriter: the driver tells ReadWriteOnce
	// (SINGLE_NODE_MULTI_WRITER) from ReadWriteOncePod
	// (SINGLE_NODE_SINGLE_WRITER).
	SingleNodeMultiWriter bool
}

// Capabilities asks the driver for its node service's capabilities.
func (c *Client) Capabilities(ctx context.Context) (NodeCapabilities, error) {
	r, err := c.node.NodeGetCapabilities(ctx, &csipb.NodeGetCapabilitiesRequest{})
	if err != nil {
		return NodeCapabilities{}, err
	}
	var caps NodeCapabilities
	for _, cp := range r.GetCapabilities() {
		switch cp.GetRpc().GetType() {
		case csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME:
			caps.StageUnstage = true
		case csipb.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP:
			caps.VolumeMountGroup = true
		case csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS:
			caps.GetVolumeStats = true
		case csipb.NodeServiceCapability_RPC_EXPAND_VOLUME:
			caps.ExpandVolume = true
		case csipb.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER:
			caps.SingleNodeMultiWriter = true
		}
	}
	return caps, nil
}

// Volume is what staging and publishing a volume need.
type Volume struct {
	Handle string
	// FSType and MountFlags make its mount capability; AccessMode is the
	// CSI access mode of its PV's first access mode.
	FSType     string
	MountFlags []string
	// MountGroup is the volume mount group (the pod's fsGroup) for a
	// driver with VOLUME_MOUNT_GROUP.
	MountGroup string
	// Block asks for a block device (volumeMode Block) instead of a
	// mounted filesystem.
	Block      bool
	AccessMode csipb.VolumeCapability_AccessMode_Mode
	ReadOnly   bool
	// Context is the PV's volumeAttributes (and the pod's, when the driver
	// asks for pod info); PublishContext the attachment's metadata.
	Context, PublishContext map[string]string
	StageSecrets            map[string]string
	PublishSecrets          map[string]string
}

func (v Volume) capability() *csipb.VolumeCapability {
	if v.Block {
		return &csipb.VolumeCapability{AccessType: &csipb.VolumeCapability_Block{Block: &csipb.VolumeCapability_BlockVolume{}},
			AccessMode: &csipb.VolumeCapability_AccessMode{Mode: v.AccessMode}}
	}
	return &csipb.VolumeCapability{
		AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{FsType: v.FSType, MountFlags: v.MountFlags,
			VolumeMountGroup: v.MountGroup}},
		AccessMode: &csipb.VolumeCapability_AccessMode{Mode: v.AccessMode}}
}

// NodeStageVolume stages v at stagingPath (the node's global mount).
func (c *Client) NodeStageVolume(ctx context.Context, v Volume, stagingPath string) error {
	_, err := c.node.NodeStageVolume(ctx, &csipb.NodeStageVolumeRequest{VolumeId: v.Handle, PublishContext: v.PublishContext,
		StagingTargetPath: stagingPath, VolumeCapability: v.capability(), Secrets: v.StageSecrets, VolumeContext: v.Context})
	return err
}

// NodeUnstageVolume undoes NodeStageVolume.
func (c *Client) NodeUnstageVolume(ctx context.Context, handle, stagingPath string) error {
	_, err := c.node.NodeUnstageVolume(ctx, &csipb.NodeUnstageVolumeRequest{VolumeId: handle, StagingTargetPath: stagingPath})
	return err
}

// NodePublishVolume publishes v at targetPath for one pod (stagingPath:
// "" when the driver does not stage).
func (c *Client) NodePublishVolume(ctx context.Context, v Volume, stagingPath, targetPath string) error {
	_, err := c.node.NodePublishVolume(ctx, &csipb.NodePublishVolumeRequest{VolumeId: v.Handle, PublishContext: v.PublishContext,
		StagingTargetPath: stagingPath, TargetPath: targetPath, VolumeCapability: v.capability(), Readonly: v.ReadOnly,
		Secrets: v.PublishSecrets, VolumeContext: v.Context})
	return err
}

// NodeUnpublishVolume undoes NodePublishVolume.
func (c *Client) NodeUnpublishVolume(ctx context.Context, handle, targetPath string) error {
	_, err := c.node.NodeUnpublishVolume(ctx, &csipb.NodeUnpublishVolumeRequest{VolumeId: handle, TargetPath: targetPath})
	return err
}

// VolumeUsage is what NodeGetVolumeStats says of a volume: bytes and
// inodes, each total, available and used; nil where the driver did not
// say.
type VolumeUsage struct {
	Bytes, Inodes *Usage
}

// Usage is one unit's figures.
type Usage struct{ Total, Available, Used uint64 }

// NodeGetVolumeStats asks the driver how much of a published volume is
// used (volumePath: its target; stagingPath: "" when not staged).
func (c *Client) NodeGetVolumeStats(ctx context.Context, handle, volumePath, stagingPath string) (VolumeUsage, error) {
	r, err := c.node.NodeGetVolumeStats(ctx, &csipb.NodeGetVolumeStatsRequest{VolumeId: handle, VolumePath: volumePath,
		StagingTargetPath: stagingPath})
	if err != nil {
		return VolumeUsage{}, err
	}
	var u VolumeUsage
	for _, e := range r.GetUsage() {
		v := &Usage{Total: uint64(max(e.GetTotal(), 0)), Available: uint64(max(e.GetAvailable(), 0)), Used: uint64(max(e.GetUsed(), 0))}
		switch e.GetUnit() {
		case csipb.VolumeUsage_BYTES:
			u.Bytes = v
		case csipb.VolumeUsage_INODES:
			u.Inodes = v
		}
	}
	return u, nil
}

// NodeExpandVolume grows v, published at volumePath (staged at
// stagingPath, "" if not), to at least requiredBytes; it returns the
// capacity the driver reports (0: it did not say).
func (c *Client) NodeExpandVolume(ctx context.Context, v Volume, volumePath, stagingPath string, requiredBytes int64, secrets map[string]string) (int64, error) {
	r, err := c.node.NodeExpandVolume(ctx, &csipb.NodeExpandVolumeRequest{VolumeId: v.Handle, VolumePath: volumePath,
		StagingTargetPath: stagingPath, CapacityRange: &csipb.CapacityRange{RequiredBytes: requiredBytes},
		VolumeCapability: v.capability(), Secrets: secrets})
	if err != nil {
		return 0, err
	}
	return r.GetCapacityBytes(), nil
}
