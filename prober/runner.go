package prober

import (
	"context"
	"errors"
	"net/http"
	"time"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"

	v1 "k8s.io/api/core/v1"

	"github.com/nodekit-dev/nodekit/prober/probe"
)

// ProbeTarget is what a probe runs against: the pod, the container and
// where to reach them.
type ProbeTarget struct {
	Pod         *v1.Pod
	Container   *v1.Container
	ContainerID string
	// PodIPs of the pod's sandbox; empty on the host network.
	PodIPs []string
	// HostIP is used for host-network pods.
	HostIP string
}

// Runner executes one probe. The default runs the handlers of package
// probe; tests and custom agents may supply their own.
type Runner interface {
	Run(ctx context.Context, p *v1.Probe, t ProbeTarget) (probe.Result, string, error)
}

// NewRunner returns the default Runner: package probe's HTTP, TCP, gRPC and
// exec handlers, exec going through e (nil: exec probes error).
func NewRunner(e probe.Execer) Runner {
	return &handlers{http: probe.NewHTTP(probe.HTTPOptions{}), grpc: probe.NewGRPC(probe.GRPCOptions{}), exec: e}
}

// handlers is the default Runner.
type handlers struct {
	http *probe.HTTPProber
	grpc *probe.GRPCProber
	exec probe.Execer
}

func (h *handlers) Run(ctx context.Context, p *v1.Probe, t ProbeTarget) (probe.Result, string, error) {
	timeout := time.Duration(p.TimeoutSeconds) * time.Second
	switch {
	case p.Exec != nil:
		if h.exec == nil {
			return probe.Unknown, "", errors.New("exec probe: no runtime to exec in")
		}
		return probe.Exec(ctx, h.exec, t.ContainerID, p.Exec.Command, timeout)
	case p.HTTPGet != nil:
		req, err := httpRequest(p, t)
		if err != nil {
			return probe.Unknown, "", err
		}
		return h.http.Probe(ctx, req)
	case p.TCPSocket != nil:
		host, port, err := tcpTarget(p, t)
		if err != nil {
			return probe.Unknown, "", err
		}
		return probe.TCP(ctx, host, port, timeout)
	case p.GRPC != nil:
		service := ""
		if p.GRPC.Service != nil {
			service = *p.GRPC.Service
		}
		return h.grpc.Probe(ctx, t.host(), int(p.GRPC.Port), service, timeout)
	}
	return probe.Unknown, "", errors.New("probe has no handler")
}

// httpRequest resolves an httpGet probe against t.
func httpRequest(p *v1.Probe, t ProbeTarget) (probe.HTTPRequest, error) {
	g := p.HTTPGet
	port, err := kc.ResolvePort(g.Port, t.Container)
	if err != nil {
		return probe.HTTPRequest{}, err
	}
	host := g.Host
	if host == "" {
		host = t.host()
	}
	scheme := "http"
	if g.Scheme == v1.URISchemeHTTPS {
		scheme = "https"
	}
	var headers http.Header
	if len(g.HTTPHeaders) > 0 {
		headers = make(http.Header, len(g.HTTPHeaders))
		for _, hv := range g.HTTPHeaders {
			headers.Add(hv.Name, hv.Value)
		}
	}
	return probe.HTTPRequest{Scheme: scheme, Host: host, Port: port, Path: g.Path, Headers: headers,
		Timeout: time.Duration(p.TimeoutSeconds) * time.Second}, nil
}

// tcpTarget resolves a tcpSocket probe against t.
func tcpTarget(p *v1.Probe, t ProbeTarget) (string, int, error) {
	port, err := kc.ResolvePort(p.TCPSocket.Port, t.Container)
	if err != nil {
		return "", 0, err
	}
	host := p.TCPSocket.Host
	if host == "" {
		host = t.host()
	}
	return host, port, nil
}

func (t ProbeTarget) host() string {
	if len(t.PodIPs) > 0 {
		return t.PodIPs[0]
	}
	return t.HostIP
}
