package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
)

// Streamer starts a pod's interactive sessions, as the kubelet's
// HostInterface does: each Get returns the runtime's URL for the session,
// which the handler proxies; RunInContainer runs a command to its end.
// *kuberuntime.Manager is one. Errors wrapping kubecontainer.ErrPodNotFound or
// ErrContainerNotFound are answered 404.
type Streamer interface {
	GetExec(ctx context.Context, uid types.UID, container string, cmd []string, o kc.StreamOptions) (*url.URL, error)
	GetAttach(ctx context.Context, uid types.UID, container string, o kc.StreamOptions) (*url.URL, error)
	GetPortForward(ctx context.Context, uid types.UID, ports []int32) (*url.URL, error)
	RunInContainer(ctx context.Context, uid types.UID, container string, cmd []string, timeout time.Duration) ([]byte, error)
}

// sessionTarget is a streaming path's pod and container: the kubelet's
// /<verb>/<namespace>/<pod>[/<uid>]/<container> (no container for
// /portForward).
type sessionTarget struct {
	namespace, name string
	uid             types.UID
	container       string
}

func parseTarget(prefix, path string, withContainer bool) (sessionTarget, error) {
	parts := strings.Split(strings.TrimPrefix(path, prefix), "/")
	shape := prefix + "<namespace>/<pod>[/<uid>]"
	if withContainer {
		shape += "/<container>"
	}
	n := len(parts)
	if withContainer {
		n--
	}
	if n != 2 && n != 3 || slicesHaveEmpty(parts) {
		return sessionTarget{}, fmt.Errorf("path %q: must be %s", path, shape)
	}
	t := sessionTarget{namespace: parts[0], name: parts[1]}
	if n == 3 {
		t.uid = types.UID(parts[2])
	}
	if withContainer {
		t.container = parts[len(parts)-1]
	}
	return t, nil
}

func slicesHaveEmpty(parts []string) bool {
	for _, p := range parts {
		if p == "" {
			return true
		}
	}
	return false
}

// findPod is the kubelet's GetPodByName over the node's pods, with the
// path's UID, when given, checked.
func (h *Handler) findPod(t sessionTarget) (*v1.Pod, error) {
	for _, p := range h.cfg.Pods.Pods() {
		if p.Namespace == t.namespace && p.Name == t.name {
			if t.uid != "" && p.UID != t.uid {
				return nil, fmt.Errorf("%w: pod %s/%s has UID %s, not %s", kc.ErrPodNotFound, t.namespace, t.name, p.UID, t.uid)
			}
			return &p, nil
		}
	}
	return nil, fmt.Errorf("%w: pod %s/%s does not exist on this node", kc.ErrPodNotFound, t.namespace, t.name)
}

// exec serves /exec/...: ?command=<arg> repeated, stdin/stdout/stderr/tty
// =1 (at least one stream), proxied to the runtime's streaming server.
func (h *Handler) exec(w http.ResponseWriter, r *http.Request) {
	h.openSession(w, r, "/exec/", true, func(r *http.Request) (sessionStart, error) {
		o, err := streamOptions(r)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, pod *v1.Pod, t sessionTarget) (*url.URL, error) {
			cmd := r.URL.Query()["command"]
			if len(cmd) == 0 {
				return nil, badRequest{errors.New("command: Required value: at least one command= parameter")}
			}
			return h.cfg.Streams.GetExec(ctx, pod.UID, t.container, cmd, o)
		}, nil
	})
}

// attach serves /attach/...: the terminal setting comes from the
// container's spec, as in the kubelet.
func (h *Handler) attach(w http.ResponseWriter, r *http.Request) {
	h.openSession(w, r, "/attach/", true, func(r *http.Request) (sessionStart, error) {
		o, err := streamOptions(r)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, pod *v1.Pod, t sessionTarget) (*url.URL, error) {
			c := findSpec(pod, t.container)
			if c == nil {
				return nil, fmt.Errorf("%w: pod %s/%s has no container %q", kc.ErrContainerNotFound, pod.Namespace, pod.Name, t.container)
			}
			o.TTY = c.TTY
			if o.TTY {
				o.Stderr = false
			}
			return h.cfg.Streams.GetAttach(ctx, pod.UID, t.container, o)
		}, nil
	})
}

// portForward serves /portForward/<namespace>/<pod>[/<uid>]: SPDY clients
// name the ports per stream, WebSocket ones with ?port=.
func (h *Handler) portForward(w http.ResponseWriter, r *http.Request) {
	h.openSession(w, r, "/portForward/", false, func(r *http.Request) (sessionStart, error) {
		opts, err := portforward.NewV4Options(r)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, pod *v1.Pod, _ sessionTarget) (*url.URL, error) {
			return h.cfg.Streams.GetPortForward(ctx, pod.UID, opts.Ports)
		}, nil
	})
}

// sessionStart asks the runtime for a session's URL.
type sessionStart func(ctx context.Context, pod *v1.Pod, t sessionTarget) (*url.URL, error)

// openSession serves a session path: the method and the upgrade checked,
// the path and the request's options parsed by parse (400), the pod found
// (404), then the URL start gets is proxied.
func (h *Handler) openSession(w http.ResponseWriter, r *http.Request, prefix string, withContainer bool,
	parse func(*http.Request) (sessionStart, error)) {
	if !allowMethod(w, r, http.MethodGet, http.MethodPost) || !upgrading(w, r) {
		return
	}
	t, err := parseTarget(prefix, r.URL.Path, withContainer)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	start, err := parse(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	pod, err := h.findPod(t)
	if err != nil {
		writeSessionError(w, err)
		return
	}
	u, err := start(r.Context(), pod, t)
	if err != nil {
		writeSessionError(w, err)
		return
	}
	proxyStream(w, r, u)
}

// streamOptions are an exec's or attach's streams (input, output, error,
// tty =1), by cri-streaming's parser, the kubelet's.
func streamOptions(r *http.Request) (kc.StreamOptions, error) {
	o, err := remotecommand.NewOptions(r)
	if err != nil {
		return kc.StreamOptions{}, err
	}
	return kc.StreamOptions{Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr, TTY: o.TTY}, nil
}

func findSpec(pod *v1.Pod, name string) *v1.Container {
	if c := kc.FindContainer(pod, name); c != nil {
		return c
	}
	for i := range pod.Spec.EphemeralContainers {
		if c := &pod.Spec.EphemeralContainers[i]; c.Name == name {
			return (*v1.Container)(&c.EphemeralContainerCommon)
		}
	}
	return nil
}

// run serves POST /run/...?cmd=<space-separated command>: the command's
// output, as the kubelet's legacy /run (bounded by RunTimeout here).
func (h *Handler) run(w http.ResponseWriter, r *http.Request) {
	if !allowMethod(w, r, http.MethodPost) {
		return
	}
	t, err := parseTarget("/run/", r.URL.Path, true)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	cmd := strings.Fields(r.URL.Query().Get("cmd"))
	if len(cmd) == 0 {
		http.Error(w, "cmd: Required value: the command to run, its arguments separated by spaces", http.StatusBadRequest)
		return
	}
	pod, err := h.findPod(t)
	if err != nil {
		writeSessionError(w, err)
		return
	}
	out, err := h.cfg.Streams.RunInContainer(r.Context(), pod.UID, t.container, cmd, h.cfg.RunTimeout)
	if err != nil {
		writeSessionError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json") // the kubelet's, for raw output
	_, _ = w.Write(out)
}

func allowMethod(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	http.Error(w, fmt.Sprintf("method %s not allowed: use %s", r.Method, strings.Join(methods, " or ")), http.StatusMethodNotAllowed)
	return false
}

// upgrading refuses a session request that is not a connection upgrade
// (SPDY or WebSocket) before the runtime is asked for a session.
func upgrading(w http.ResponseWriter, r *http.Request) bool {
	if httpstream.IsUpgradeRequest(r) {
		return true
	}
	http.Error(w, "Upgrade request required: a streaming session needs an SPDY or WebSocket upgrade (kubectl exec, attach, port-forward)",
		http.StatusBadRequest)
	return false
}

// badRequest is a session error caused by the request.
type badRequest struct{ error }

func writeSessionError(w http.ResponseWriter, err error) {
	var bad badRequest
	switch {
	case errors.As(err, &bad):
		http.Error(w, err.Error(), http.StatusBadRequest)
	case errors.Is(err, kc.ErrPodNotFound), errors.Is(err, kc.ErrContainerNotFound):
		http.Error(w, err.Error(), http.StatusNotFound)
	default:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// proxyStream hands the upgraded connection to the runtime's streaming
// server, as the kubelet does: the request, with its query, goes to u (the
// session's path and single-use token); a 101 answer joins the two
// connections, any other is passed back. The caller's credentials stay
// here. net/http/httputil's proxy does it: apimachinery's
// UpgradeAwareHandler, the kubelet's, also links an HTML rewriter (whose
// tables are half a megabyte of heap) for proxying it does not do here.
func proxyStream(w http.ResponseWriter, r *http.Request, u *url.URL) {
	r.Header.Del("Authorization")
	p := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			target := *u
			target.RawQuery = pr.In.URL.RawQuery
			pr.Out.URL = &target
			pr.Out.Host = ""
		},
		// A direct dial, as the kubelet's: no proxy from the environment.
		Transport: &http.Transport{DialContext: (&net.Dialer{Timeout: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout: 10 * time.Second, DisableKeepAlives: true},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, "proxying to the runtime's streaming server: "+err.Error(), http.StatusBadGateway)
		},
		ErrorLog: log.New(io.Discard, "", 0),
	}
	p.ServeHTTP(w, r)
}
