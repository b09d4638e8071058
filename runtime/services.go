package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/runtime/criconv"
)

// Client implements the cri-api's own interfaces, so code written against the
// kubelet's internalapi takes it unchanged.
var (
	_ internalapi.RuntimeService      = (*Client)(nil)
	_ internalapi.ImageManagerService = (*Client)(nil)
)

// Version returns the runtime's name, version and CRI API version.
func (c *Client) Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error) {
	return c.rs.Version(ctx, &runtimeapi.VersionRequest{Version: apiVersion})
}

// Status returns the runtime's conditions.
func (c *Client) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	return c.rs.Status(ctx, &runtimeapi.StatusRequest{Verbose: verbose})
}

// RuntimeConfig returns the runtime's configuration (cgroup driver).
func (c *Client) RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	return c.rs.RuntimeConfig(ctx, &runtimeapi.RuntimeConfigRequest{})
}

// UpdateRuntimeConfig passes the pod CIDR to the runtime.
func (c *Client) UpdateRuntimeConfig(ctx context.Context, cfg *runtimeapi.RuntimeConfig) error {
	_, err := c.rs.UpdateRuntimeConfig(ctx, &runtimeapi.UpdateRuntimeConfigRequest{RuntimeConfig: cfg})
	return err
}

// RunPodSandbox creates and starts a sandbox and returns its ID.
func (c *Client) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	r, err := c.rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: config, RuntimeHandler: runtimeHandler})
	if err != nil {
		return "", err
	}
	return r.PodSandboxId, nil
}

// StopPodSandbox stops a sandbox and its containers; a sandbox already gone is not an error.
func (c *Client) StopPodSandbox(ctx context.Context, id string) error {
	_, err := c.rs.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
	return ignoreNotFound(err)
}

// RemovePodSandbox removes a sandbox and its containers; a sandbox already gone is not an error.
func (c *Client) RemovePodSandbox(ctx context.Context, id string) error {
	_, err := c.rs.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
	return ignoreNotFound(err)
}

// PodSandboxStatus returns a sandbox's status.
func (c *Client) PodSandboxStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	return c.rs.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: verbose})
}

// ListPodSandbox lists sandboxes matching filter (nil for all).
func (c *Client) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	r, err := c.rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: filter})
	if err != nil {
		return nil, err
	}
	return r.Items, nil
}

// PortForward returns the streaming URL for a port forward.
func (c *Client) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	return c.rs.PortForward(ctx, req)
}

// UpdatePodSandboxResources updates a sandbox's resources.
func (c *Client) UpdatePodSandboxResources(ctx context.Context, req *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	return c.rs.UpdatePodSandboxResources(ctx, req)
}

// CheckpointPod checkpoints a pod.
func (c *Client) CheckpointPod(ctx context.Context, req *runtimeapi.CheckpointPodRequest) error {
	_, err := c.rs.CheckpointPod(ctx, req)
	return err
}

// RestorePod restores a checkpointed pod.
func (c *Client) RestorePod(ctx context.Context, req *runtimeapi.RestorePodRequest) (*runtimeapi.RestorePodResponse, error) {
	return c.rs.RestorePod(ctx, req)
}

// CreateContainer creates a container in a sandbox and returns its ID.
func (c *Client) CreateContainer(ctx context.Context, sandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	r, err := c.rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sandboxID, Config: config, SandboxConfig: sandboxConfig})
	if err != nil {
		return "", err
	}
	return r.ContainerId, nil
}

// StartContainer starts a created container.
func (c *Client) StartContainer(ctx context.Context, id string) error {
	_, err := c.rs.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id})
	return err
}

// StopContainer stops a container, killing it after timeout seconds; a
// container already gone is not an error.
func (c *Client) StopContainer(ctx context.Context, id string, timeout int64) error {
	_, err := c.rs.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: timeout})
	return ignoreNotFound(err)
}

// RemoveContainer removes a container; a container already gone is not an error.
func (c *Client) RemoveContainer(ctx context.Context, id string) error {
	_, err := c.rs.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id})
	return ignoreNotFound(err)
}

// ListContainers lists containers matching filter (nil for all).
func (c *Client) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	r, err := c.rs.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: filter})
	if err != nil {
		return nil, err
	}
	return r.Containers, nil
}

// ContainerStatus returns a container's status.
func (c *Client) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	return c.rs.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: verbose})
}

// UpdateContainerResources changes a running container's resources.
func (c *Client) UpdateContainerResources(ctx context.Context, id string, res *runtimeapi.ContainerResources) error {
	_, err := c.rs.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{
		ContainerId: id, Linux: res.GetLinux(), Windows: res.GetWindows(),
	})
	return err
}

// ExecSyncResult is a finished command's output and exit code.
type ExecSyncResult struct {
	Stdout, Stderr []byte
	ExitCode       int32
}

// ExecSyncCmd runs cmd in a container and returns its output and exit code;
// a non-zero exit code is a result, not an error. timeout (rounded up to whole
// seconds, as CRI takes seconds) bounds the command; 0 means none.
func (c *Client) ExecSyncCmd(ctx context.Context, id string, cmd []string, timeout time.Duration) (*ExecSyncResult, error) {
	r, err := c.rs.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: ceilSeconds(timeout)})
	if err != nil {
		return nil, err
	}
	return &ExecSyncResult{Stdout: r.Stdout, Stderr: r.Stderr, ExitCode: r.ExitCode}, nil
}

// ExecSync is the cri-api form of ExecSyncCmd: a non-zero exit code is
// returned as an *ExitError.
func (c *Client) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	r, err := c.ExecSyncCmd(ctx, id, cmd, timeout)
	if err != nil {
		return nil, nil, err
	}
	if r.ExitCode != 0 {
		return r.Stdout, r.Stderr, &ExitError{Code: r.ExitCode}
	}
	return r.Stdout, r.Stderr, nil
}

// ExitError is a command that ran and exited non-zero.
type ExitError struct{ Code int32 }

func (e *ExitError) Error() string {
	return "command terminated with non-zero exit code " + strconv.Itoa(int(e.Code))
}

// ExitStatus is the command's exit code (the k8s.io/utils/exec convention,
// which probe.Exec relies on).
func (e *ExitError) ExitStatus() int { return int(e.Code) }

// Exec returns the streaming URL for an interactive exec.
func (c *Client) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	return c.rs.Exec(ctx, req)
}

// Attach returns the streaming URL for an attach.
func (c *Client) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	return c.rs.Attach(ctx, req)
}

// ReopenContainerLog asks the runtime to reopen a container's log file (after rotation).
func (c *Client) ReopenContainerLog(ctx context.Context, id string) error {
	_, err := c.rs.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: id})
	return err
}

// CheckpointContainer checkpoints a container.
func (c *Client) CheckpointContainer(ctx context.Context, req *runtimeapi.CheckpointContainerRequest) error {
	_, err := c.rs.CheckpointContainer(ctx, req)
	return err
}

// GetContainerEvents streams container events into ch until the stream or
// ctx ends; established, if not nil, is called once the stream is open. The
// returned error is typed: errors.Is(err, ErrUnimplemented) for a runtime
// without events (containerd 1.6).
func (c *Client) GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, established func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	return c.streamEvents(ctx, func(ev *runtimeapi.ContainerEventResponse) bool {
		select {
		case ch <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}, established)
}

// ContainerEvents streams container events, converted, into ch until the
// stream or ctx ends; connected, if not nil, is called once the stream is
// open. A runtime without events gives an error that errors.Is both
// ErrUnimplemented and errors.ErrUnsupported. It is pleg's EventSource.
func (c *Client) ContainerEvents(ctx context.Context, ch chan<- *kc.ContainerEvent, connected func()) error {
	var established func(runtimeapi.RuntimeService_GetContainerEventsClient)
	if connected != nil {
		established = func(runtimeapi.RuntimeService_GetContainerEventsClient) { connected() }
	}
	err := c.streamEvents(ctx, func(ev *runtimeapi.ContainerEventResponse) bool {
		select {
		case ch <- criconv.ContainerEventFromCRI(ev):
			return true
		case <-ctx.Done():
			return false
		}
	}, established)
	if errors.Is(err, ErrUnimplemented) {
		return fmt.Errorf("%w: %w", errors.ErrUnsupported, err)
	}
	return err
}

// streamEvents opens GetContainerEvents and hands each event to deliver
// until it returns false (ctx ended) or the stream fails.
func (c *Client) streamEvents(ctx context.Context, deliver func(*runtimeapi.ContainerEventResponse) bool,
	established func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	const op = "get_container_events"
	start := time.Now()
	stream, err := c.rs.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
	err = wrapError(op, err)
	c.opts.metrics.observe(op, start, err)
	if err != nil {
		return err
	}
	// As in the kubelet's client, the stream counts as established once
	// opened; a runtime without the method (containerd 1.6) answers
	// Unimplemented on the first Recv.
	if established != nil {
		established(stream)
	}
	for {
		ev, err := stream.Recv()
		if err != nil {
			err = wrapError(op, err)
			c.opts.metrics.streamError(op)
			return err
		}
		if !deliver(ev) {
			return wrapError(op, ctx.Err())
		}
	}
}

// ContainerStats returns one container's stats.
func (c *Client) ContainerStats(ctx context.Context, id string) (*runtimeapi.ContainerStats, error) {
	r, err := c.rs.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: id})
	if err != nil {
		return nil, err
	}
	return r.Stats, nil
}

// ListContainerStats returns stats of the containers matching filter.
func (c *Client) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	r, err := c.rs.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{Filter: filter})
	if err != nil {
		return nil, err
	}
	return r.Stats, nil
}

// PodSandboxStats returns one sandbox's stats.
func (c *Client) PodSandboxStats(ctx context.Context, id string) (*runtimeapi.PodSandboxStats, error) {
	r, err := c.rs.PodSandboxStats(ctx, &runtimeapi.PodSandboxStatsRequest{PodSandboxId: id})
	if err != nil {
		return nil, err
	}
	return r.Stats, nil
}

// ListPodSandboxStats returns stats of the sandboxes matching filter.
func (c *Client) ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	r, err := c.rs.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{Filter: filter})
	if err != nil {
		return nil, err
	}
	return r.Stats, nil
}

// ListMetricDescriptors returns the runtime's metric descriptors.
func (c *Client) ListMetricDescriptors(ctx context.Context) ([]*runtimeapi.MetricDescriptor, error) {
	r, err := c.rs.ListMetricDescriptors(ctx, &runtimeapi.ListMetricDescriptorsRequest{})
	if err != nil {
		return nil, err
	}
	return r.Descriptors, nil
}

// ListPodSandboxMetrics returns the runtime's sandbox metrics.
func (c *Client) ListPodSandboxMetrics(ctx context.Context) ([]*runtimeapi.PodSandboxMetrics, error) {
	r, err := c.rs.ListPodSandboxMetrics(ctx, &runtimeapi.ListPodSandboxMetricsRequest{})
	if err != nil {
		return nil, err
	}
	return r.PodMetrics, nil
}

// ListImages lists images matching filter (nil for all).
func (c *Client) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	r, err := c.is.ListImages(ctx, &runtimeapi.ListImagesRequest{Filter: filter})
	if err != nil {
		return nil, err
	}
	return r.Images, nil
}

// ImageStatus returns an image's status; resp.Image is nil when the image is absent.
func (c *Client) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	return c.is.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: image, Verbose: verbose})
}

// PullImage pulls an image and returns its reference (image ID), under the
// longer pull timeout.
func (c *Client) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	r, err := c.is.PullImage(ctx, &runtimeapi.PullImageRequest{Image: image, Auth: auth, SandboxConfig: sandboxConfig})
	if err != nil {
		return "", err
	}
	return r.ImageRef, nil
}

// RemoveImage removes an image; an image already gone is not an error.
func (c *Client) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	_, err := c.is.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: image})
	return ignoreNotFound(err)
}

// ImageFsInfo returns the image filesystems' usage.
func (c *Client) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return c.is.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
}

// FilesystemMountpoints returns where the runtime keeps images and
// containers' writable layers: the mountpoints of ImageFsInfo's first
// image and container filesystems (containers "" when the runtime lists
// none apart, as containerd 1.x).
func (c *Client) FilesystemMountpoints(ctx context.Context) (images, containers string, err error) {
	info, err := c.ImageFsInfo(ctx)
	if err != nil {
		return "", "", err
	}
	if fs := info.GetImageFilesystems(); len(fs) > 0 {
		images = fs[0].GetFsId().GetMountpoint()
	}
	if fs := info.GetContainerFilesystems(); len(fs) > 0 {
		containers = fs[0].GetFsId().GetMountpoint()
	}
	return images, containers, nil
}

func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// CheckReady is the kubelet's runtime health check: the runtime answers
// its Status call and does not say it is not ready (RuntimeReady false).
func (c *Client) CheckReady(ctx context.Context) error {
	st, err := c.Status(ctx, false)
	if err != nil {
		return err
	}
	for _, cond := range st.GetStatus().GetConditions() {
		if cond.Type == runtimeapi.RuntimeReady && !cond.Status {
			return fmt.Errorf("not ready: %s %s", cond.Reason, cond.Message)
		}
	}
	return nil
}

// Images lists the runtime's images in kubecontainer's terms (for the node
// status).
func (c *Client) Images(ctx context.Context) ([]kc.Image, error) {
	imgs, err := c.ListImages(ctx, nil)
	if err != nil {
		return nil, err
	}
	out := make([]kc.Image, 0, len(imgs))
	for _, i := range imgs {
		out = append(out, kc.Image{ID: i.Id, RepoTags: i.RepoTags, RepoDigests: i.RepoDigests, Size: i.Size})
	}
	return out, nil
}

// RuntimeStatus returns the runtime's conditions in kubecontainer's terms.
func (c *Client) RuntimeStatus(ctx context.Context) (*kc.RuntimeStatus, error) {
	st, err := c.Status(ctx, false)
	if err != nil {
		return nil, err
	}
	out := &kc.RuntimeStatus{}
	for _, cond := range st.GetStatus().GetConditions() {
		out.Conditions = append(out.Conditions, kc.RuntimeCondition{Type: cond.Type, Status: cond.Status, Reason: cond.Reason, Message: cond.Message})
	}
	return out, nil
}

// SandboxImage is the runtime's sandbox (pause) image as its verbose
// status reports it (containerd 1.x: info "config" → "sandboxImage"), for
// image GC to keep; "" when the runtime does not say. containerd 2 does
// not: its status config is the runtime plugin's, while the image lives in
// the images plugin's pinned_images; it marks the image Pinned instead
// (ImageStatus, ListImages), which image GC keeps as well.
func (c *Client) SandboxImage(ctx context.Context) (string, error) {
	st, err := c.Status(ctx, true)
	if err != nil {
		return "", err
	}
	raw := st.GetInfo()["config"]
	if raw == "" {
		return "", nil
	}
	var cfg struct {
		SandboxImage string `json:"sandboxImage"`
	}
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return "", fmt.Errorf("runtime status: config: %w", err)
	}
	return cfg.SandboxImage, nil
}
