package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/runtime"
)

// StreamingService is the part of the CRI that starts interactive
// sessions: each call returns the URL of the runtime's streaming server
// (containerd's is on 127.0.0.1) where the session's client connects.
type StreamingService interface {
	Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error)
	Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error)
	PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error)
}

var _ StreamingService = (*runtime.Client)(nil)

// errNoStreaming is returned when ManagerConfig.Streaming is nil.
var errNoStreaming = errors.New("runtime manager: no streaming service (ManagerConfig.Streaming)")

// GetExec returns the runtime's URL for an exec session running cmd in
// the pod's running container of that name, as the kubelet's GetExec.
func (m *Manager) GetExec(ctx context.Context, uid types.UID, container string, cmd []string, o kc.StreamOptions) (*url.URL, error) {
	if m.cfg.Streaming == nil {
		return nil, errNoStreaming
	}
	id, err := m.runningContainer(ctx, uid, container)
	if err != nil {
		return nil, err
	}
	resp, err := m.cfg.Streaming.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: cmd,
		Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr, Tty: o.TTY})
	if err != nil {
		return nil, sessionError(err, container)
	}
	return parseStreamURL(resp.GetUrl())
}

// GetAttach returns the runtime's URL for attaching to the pod's running
// container of that name. o.TTY must be the container spec's tty: a
// process's terminal cannot change once it runs.
func (m *Manager) GetAttach(ctx context.Context, uid types.UID, container string, o kc.StreamOptions) (*url.URL, error) {
	if m.cfg.Streaming == nil {
		return nil, errNoStreaming
	}
	id, err := m.runningContainer(ctx, uid, container)
	if err != nil {
		return nil, err
	}
	resp, err := m.cfg.Streaming.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: id,
		Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr, Tty: o.TTY})
	if err != nil {
		return nil, sessionError(err, container)
	}
	return parseStreamURL(resp.GetUrl())
}

// GetPortForward returns the runtime's URL for forwarding ports (none:
// the client names them per stream) into the pod's ready sandbox.
func (m *Manager) GetPortForward(ctx context.Context, uid types.UID, ports []int32) (*url.URL, error) {
	if m.cfg.Streaming == nil {
		return nil, errNoStreaming
	}
	pod, err := m.runningPod(ctx, uid)
	if err != nil {
		return nil, err
	}
	if len(pod.Sandboxes) == 0 {
		return nil, fmt.Errorf("%w: pod %s/%s has no ready sandbox", kc.ErrPodNotFound, pod.Namespace, pod.Name)
	}
	resp, err := m.cfg.Streaming.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: newestSandbox(pod).ID, Port: ports})
	if err != nil {
		if errors.Is(err, runtime.ErrNotFound) {
			return nil, fmt.Errorf("%w: %v", kc.ErrPodNotFound, err)
		}
		return nil, err
	}
	return parseStreamURL(resp.GetUrl())
}

// RunInContainer runs cmd in the pod's running container and returns its
// stdout then stderr, as the kubelet's /run does; a non-zero exit is an
// *ExitError after the output. timeout 0 means none.
func (m *Manager) RunInContainer(ctx context.Context, uid types.UID, container string, cmd []string, timeout time.Duration) ([]byte, error) {
	id, err := m.runningContainer(ctx, uid, container)
	if err != nil {
		return nil, err
	}
	stdout, stderr, err := m.cfg.Runtime.ExecSync(ctx, id, cmd, timeout)
	return append(stdout, stderr...), sessionError(err, container)
}

// runningPod finds the pod with running containers and ready sandboxes,
// as the kubelet's findContainer reads the runtime's pods.
func (m *Manager) runningPod(ctx context.Context, uid types.UID) (*kc.Pod, error) {
	pods, err := m.GetPods(ctx, false)
	if err != nil {
		return nil, err
	}
	for _, p := range pods {
		if p.ID == uid {
			return p, nil
		}
	}
	return nil, fmt.Errorf("%w: no running pod with UID %q", kc.ErrPodNotFound, uid)
}

func (m *Manager) runningContainer(ctx context.Context, uid types.UID, name string) (string, error) {
	pod, err := m.runningPod(ctx, uid)
	if err != nil {
		return "", err
	}
	var found *kc.Container
	for _, c := range pod.Containers {
		if c.Name == name && (found == nil || c.CreatedAt > found.CreatedAt) {
			found = c
		}
	}
	if found == nil {
		return "", fmt.Errorf("%w: no running container %q in pod %s/%s", kc.ErrContainerNotFound, name, pod.Namespace, pod.Name)
	}
	return found.ID, nil
}

func newestSandbox(p *kc.Pod) *kc.Container {
	newest := p.Sandboxes[0]
	for _, s := range p.Sandboxes[1:] {
		if s.CreatedAt > newest.CreatedAt {
			newest = s
		}
	}
	return newest
}

// sessionError marks a container that went away between the lookup and
// the call as not found.
func sessionError(err error, container string) error {
	if err != nil && errors.Is(err, runtime.ErrNotFound) {
		return fmt.Errorf("%w: container %q: %v", kc.ErrContainerNotFound, container, err)
	}
	return err
}

// parseStreamURL checks the runtime's answer: an absolute http(s) URL.
func parseStreamURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("runtime returned a bad streaming URL %q: %w", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("runtime returned a streaming URL %q that is not an absolute http(s) URL", raw)
	}
	return u, nil
}
