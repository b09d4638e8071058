package kuberuntime

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"

	v1 "k8s.io/api/core/v1"
)

// maxHookOutput caps what a hook's output adds to a message.
const maxHookOutput = 1024

// runHook runs a postStart or preStop handler: exec through the runtime,
// an HTTP GET, or a sleep. timeout 0 means no limit besides ctx.
func (m *Manager) runHook(ctx context.Context, pod *v1.Pod, c *v1.Container, id string, podIPs []string, h *v1.LifecycleHandler, timeout time.Duration) (string, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	switch {
	case h.Exec != nil:
		stdout, stderr, err := m.cfg.Runtime.ExecSync(ctx, id, h.Exec.Command, timeout)
		out := string(append(stdout, stderr...))
		if len(out) > maxHookOutput {
			out = out[:maxHookOutput]
		}
		return out, err
	case h.HTTPGet != nil:
		return "", m.httpHook(ctx, pod, c, podIPs, h.HTTPGet)
	case h.Sleep != nil:
		// The sleep action (GA in v1.34); seconds: 0 is a no-op (v1.33's
		// PodLifecycleSleepActionAllowZero, on by default since).
		if h.Sleep.Seconds <= 0 {
			return "", nil
		}
		select {
		case <-m.cfg.Clock.After(time.Duration(h.Sleep.Seconds) * time.Second):
			return "", nil
		case <-ctx.Done():
			return "", fmt.Errorf("container terminated before sleep hook finished: %w", ctx.Err())
		}
	case h.TCPSocket != nil:
		return "", errors.New("tcpSocket is not supported in lifecycle hooks")
	}
	return "", errors.New("lifecycle handler has no action")
}

func (m *Manager) httpHook(ctx context.Context, pod *v1.Pod, c *v1.Container, podIPs []string, g *v1.HTTPGetAction) error {
	host := g.Host
	if host == "" {
		switch {
		case len(podIPs) > 0:
			host = podIPs[0]
		case m.cfg.HostIP != "":
			host = m.cfg.HostIP
		default:
			host = "127.0.0.1"
		}
	}
	port, err := kc.ResolvePort(g.Port, c)
	if err != nil {
		return err
	}
	scheme := "http"
	if g.Scheme == v1.URISchemeHTTPS {
		scheme = "https"
	}
	u := url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port)), Path: g.Path}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	for _, h := range g.HTTPHeaders {
		req.Header.Add(h.Name, h.Value)
	}
	resp, err := m.cfg.HookHTTPClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 10<<10))
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("HTTP lifecycle hook %s returned status %d", u.String(), resp.StatusCode)
	}
	return nil
}

// maxHookRedirects is net/http's and the kubelet's limit.
const maxHookRedirects = 10

// newHookHTTPClient is the client of httpGet hooks, set up as the kubelet's
// HTTP probes are: a hook goes straight to the pod (never through a proxy
// from the node's environment), pods serve self-signed certificates, and a
// redirect to another host is not followed — its 3xx answer is the result.
func newHookHTTPClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:             nil,
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as the kubelet's probes: nothing to verify against
			DisableKeepAlives: true,
			DialContext:       (&net.Dialer{}).DialContext,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxHookRedirects {
				return fmt.Errorf("stopped after %d redirects", maxHookRedirects)
			}
			if req.URL.Hostname() != via[0].URL.Hostname() {
				return http.ErrUseLastResponse
			}
			return nil
		},
	}
}
