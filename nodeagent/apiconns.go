package nodeagent

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/nodekit-dev/nodekit/kubeapi"
)

// APIConnections is a pool of connections to the API server that one or
// many agents share and that can be closed for good. client-go's own
// transport cache keeps connections for the process's life, and an
// http.Transport's CloseIdleConnections leaves a connection whose last
// watch is still being torn down; Close closes every connection, idle or
// not, so that a stopped agent leaves no goroutine behind.
type APIConnections struct {
	transport *http.Transport
	codecs    *kubeapi.Codecs                           // shared by the clients, as their connections
	wrap      func(http.RoundTripper) http.RoundTripper // metrics; nil: none
	mu        sync.Mutex
	conns     map[*trackedConn]struct{}
	closed    bool
}

// NewAPIConnections returns a pool to the API server rc points at, with
// its TLS settings (HTTP/2 where the server offers it).
func NewAPIConnections(rc *rest.Config) (*APIConnections, error) {
	tlsCfg, err := rest.TLSConfigFor(rc)
	if err != nil {
		return nil, fmt.Errorf("API server TLS: %w", err)
	}
	c := &APIConnections{conns: map[*trackedConn]struct{}{}, codecs: kubeapi.NewCodecs()}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	c.transport = &http.Transport{TLSClientConfig: tlsCfg, Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true,
		MaxIdleConnsPerHost: 25, IdleConnTimeout: 90 * time.Second, TLSHandshakeTimeout: 10 * time.Second,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return c.track(conn)
		}}
	return c, nil
}

// Client returns a client with rc's identity and rate limits (QPS, Burst:
// each client its own limiter) over the pool's connections, sharing the
// pool's codecs. It speaks protobuf unless rc names a content type, as the
// kubelet (--kube-api-content-type).
func (c *APIConnections) Client(rc *rest.Config) (kubeapi.Interface, error) {
	rc = withContentType(rc)
	var base http.RoundTripper = c.transport
	if c.wrap != nil {
		base = c.wrap(base)
	}
	rt, err := rest.HTTPWrappersForConfig(rc, base)
	if err != nil {
		return nil, fmt.Errorf("API client: %w", err)
	}
	return kubeapi.New(rc, &http.Client{Transport: rt, Timeout: rc.Timeout}, kubeapi.WithCodecs(c.codecs))
}

// withContentType is rc asking for protobuf (and taking JSON, which the
// API server answers for types without protobuf) when it names no content
// type, as the kubelet's setContentTypeForClient does with
// --kube-api-content-type's default: a watch decoded from JSON costs
// several times the CPU and garbage of one from protobuf.
func withContentType(rc *rest.Config) *rest.Config {
	rc = rest.CopyConfig(rc)
	if rc.ContentType == "" {
		rc.ContentType = runtime.ContentTypeProtobuf
	}
	if rc.ContentType == runtime.ContentTypeProtobuf && rc.AcceptContentTypes == "" {
		rc.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	}
	return rc
}

// Close closes every connection; the pool dials no more. Call it once the
// agents using it have returned.
func (c *APIConnections) Close() {
	c.mu.Lock()
	c.closed = true
	conns := c.conns
	c.conns = map[*trackedConn]struct{}{}
	c.mu.Unlock()
	c.transport.CloseIdleConnections()
	for tc := range conns {
		_ = tc.Conn.Close()
	}
}

func (c *APIConnections) track(conn net.Conn) (net.Conn, error) {
	tc := &trackedConn{Conn: conn, pool: c}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		_ = conn.Close()
		return nil, net.ErrClosed
	}
	c.conns[tc] = struct{}{}
	return tc, nil
}

// trackedConn leaves the pool's set when it is closed.
type trackedConn struct {
	net.Conn
	pool *APIConnections
	once sync.Once
}

func (t *trackedConn) Close() error {
	t.once.Do(func() {
		t.pool.mu.Lock()
		delete(t.pool.conns, t)
		t.pool.mu.Unlock()
	})
	return t.Conn.Close()
}
