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
