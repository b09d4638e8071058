package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CRIVersion is the CRI API version this client speaks.
const CRIVersion = "v1"

// Client is a CRI v1 client: RuntimeService and ImageService over gRPC with a
// per-call timeout, typed errors, operation metrics and automatic reconnects.
// It is safe for concurrent use.
type Client struct {
	opts      options
	conn      *grpc.ClientConn
	imageConn *grpc.ClientConn // == conn when one endpoint serves both
	rs        runtimeapi.RuntimeServiceClient
	is        runtimeapi.ImageServiceClient
}

// Dial connects to a CRI runtime at endpoint ("unix:///path" or an absolute
// socket path) and, unless WithoutVersionCheck is given, checks within ctx
// that it serves CRI v1.
func Dial(ctx context.Context, endpoint string, opts ...Option) (*Client, error) {
	o := options{
		timeout:           DefaultRequestTimeout,
		pullTimeout:       DefaultImagePullTimeout,
		reconnectMaxDelay: DefaultReconnectMaxDelay,
	}
	for _, opt := range opts {
		opt(&o)
	}
	c := &Client{opts: o}
	var err error
	if c.conn, err = c.dial(endpoint); err != nil {
		return nil, err
	}
	c.imageConn = c.conn
	if o.imageEndpoint != "" && o.imageEndpoint != endpoint {
		if c.imageConn, err = c.dial(o.imageEndpoint); err != nil {
			c.conn.Close()
			return nil, err
		}
	}
	c.rs = runtimeapi.NewRuntimeServiceClient(c.conn)
	c.is = runtimeapi.NewImageServiceClient(c.imageConn)
	if !o.skipVersionCheck {
		v, err := c.Version(ctx, CRIVersion)
		if err != nil {
			c.closeConns()
			return nil, fmt.Errorf("runtime at %s does not answer CRI %s Version: %w", endpoint, CRIVersion, err)
		}
		if v.RuntimeApiVersion != CRIVersion {
			c.closeConns()
			return nil, fmt.Errorf("runtime at %s speaks CRI %q, want %q", endpoint, v.RuntimeApiVersion, CRIVersion)
		}
	}
	return c, nil
}

// ParseEndpoint validates a CRI endpoint and returns it in unix:// form.
func ParseEndpoint(endpoint string) (string, error) {
	switch {
	case strings.HasPrefix(endpoint, "unix:///"):
		return endpoint, nil
	case strings.HasPrefix(endpoint, "/"):
		return "unix://" + endpoint, nil
	default:
		return "", fmt.Errorf("endpoint %q: only unix sockets are supported (unix:///path or /path)", endpoint)
	}
}

func (c *Client) dial(endpoint string) (*grpc.ClientConn, error) {
	target, err := ParseEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	bo := backoff.DefaultConfig
	bo.BaseDelay = 100 * time.Millisecond
	bo.MaxDelay = c.opts.reconnectMaxDelay
	return grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: bo, MinConnectTimeout: 5 * time.Second}),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(DefaultMaxMsgSize),
			grpc.MaxCallSendMsgSize(DefaultMaxMsgSize),
			grpc.WaitForReady(c.opts.waitForReady),
			grpc.ForceCodecV2(replyCodec{encoding.GetCodecV2(grpcproto.Name)}),
		),
		grpc.WithUnaryInterceptor(c.intercept),
		// Write buffers go back to a pool between writes: an agent's
		// connection is idle nearly all the time.
		grpc.WithSharedWriteBuffer(true),
	)
}

// replyCodec is gRPC's proto codec but for where a reply of several
// frames is put together: gRPC's takes a buffer from its default pool,
// whose tiers jump from 32 KB to 1 MB, so each list reply of a node
// (tens to hundreds of KB) held a 1 MB buffer, pooled past a GC. Here the
// reply is copied into a buffer of its size, garbage once decoded.
type replyCodec struct{ encoding.CodecV2 }

func (c replyCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok || len(data) == 1 {
		return c.CodecV2.Unmarshal(data, v) // one frame: read in place
	}
	return proto.Unmarshal(data.Materialize(), m)
}

// intercept applies the per-call timeout, records metrics and maps errors.
func (c *Client) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	op := operationName(method)
	timeout := c.opts.timeout
	switch op {
	case "pull_image":
		timeout = c.opts.pullTimeout
	case "exec_sync":
		// The command's own timeout comes on top of the call's.
		if r, ok := req.(*runtimeapi.ExecSyncRequest); ok && r.Timeout > 0 {
			timeout += time.Duration(r.Timeout) * time.Second
		}
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	start := time.Now()
	err := invoker(ctx, method, req, reply, cc, opts...)
	c.opts.metrics.observe(op, start, err)
	err = wrapError(op, err)
	if errors.Is(err, ErrUnavailable) && cc != nil { // nil: an in-process runtime
		// Skip the rest of the reconnect backoff: the next call tries at once,
		// so a restarted runtime is used as soon as it is back.
		cc.ResetConnectBackoff()
	}
	return err
}

// Close closes the connections (the context is unused; it is part of the
// cri-api interface).
func (c *Client) Close(context.Context) error { return c.closeConns() }

func (c *Client) closeConns() error {
	if c.conn == nil { // an in-process runtime: nothing to close
		return nil
	}
	err := c.conn.Close()
	if c.imageConn != c.conn {
		if err2 := c.imageConn.Close(); err == nil {
			err = err2
		}
	}
	return err
}

// RuntimeServiceClient returns the raw generated client, for calls this
// wrapper does not cover; it still goes through timeouts, metrics and errors.
func (c *Client) RuntimeServiceClient() runtimeapi.RuntimeServiceClient { return c.rs }

// ImageServiceClient returns the raw generated image client.
func (c *Client) ImageServiceClient() runtimeapi.ImageServiceClient { return c.is }
