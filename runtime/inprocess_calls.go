package runtime

// Code below: one method per CRI call, each through the Client's interceptor.

import (
	"context"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func (p inProcessRuntime) Version(ctx context.Context, in *runtimeapi.VersionRequest, _ ...grpc.CallOption) (*runtimeapi.VersionResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/Version", in, p.srv.Version)
}

func (p inProcessRuntime) RunPodSandbox(ctx context.Context, in *runtimeapi.RunPodSandboxRequest, _ ...grpc.CallOption) (*runtimeapi.RunPodSandboxResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/RunPodSandbox", in, p.srv.RunPodSandbox)
}

func (p inProcessRuntime) StopPodSandbox(ctx context.Context, in *runtimeapi.StopPodSandboxRequest, _ ...grpc.CallOption) (*runtimeapi.StopPodSandboxResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/StopPodSandbox", in, p.srv.StopPodSandbox)
}

func (p inProcessRuntime) RemovePodSandbox(ctx context.Context, in *runtimeapi.RemovePodSandboxRequest, _ ...grpc.CallOption) (*runtimeapi.RemovePodSandboxResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/RemovePodSandbox", in, p.srv.RemovePodSandbox)
}

func (p inProcessRuntime) PodSandboxStatus(ctx context.Context, in *runtimeapi.PodSandboxStatusRequest, _ ...grpc.CallOption) (*runtimeapi.PodSandboxStatusResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/PodSandboxStatus", in, p.srv.PodSandboxStatus)
}

func (p inProcessRuntime) ListPodSandbox(ctx context.Context, in *runtimeapi.ListPodSandboxRequest, _ ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/ListPodSandbox", in, p.srv.ListPodSandbox)
}

func (p inProcessRuntime) StreamPodSandboxes(context.Context, *runtimeapi.StreamPodSandboxesRequest, ...grpc.CallOption) (grpc.ServerStreamingClient[runtimeapi.StreamPodSandboxesResponse], error) {
	return nil, errUnimplementedInProcess("StreamPodSandboxes")
}

func (p inProcessRuntime) CreateContainer(ctx context.Context, in *runtimeapi.CreateContainerRequest, _ ...grpc.CallOption) (*runtimeapi.CreateContainerResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/CreateContainer", in, p.srv.CreateContainer)
}

func (p inProcessRuntime) StartContainer(ctx context.Context, in *runtimeapi.StartContainerRequest, _ ...grpc.CallOption) (*runtimeapi.StartContainerResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/StartContainer", in, p.srv.StartContainer)
}

func (p inProcessRuntime) StopContainer(ctx context.Context, in *runtimeapi.StopContainerRequest, _ ...grpc.CallOption) (*runtimeapi.StopContainerResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/StopContainer", in, p.srv.StopContainer)
}

func (p inProcessRuntime) RemoveContainer(ctx context.Context, in *runtimeapi.RemoveContainerRequest, _ ...grpc.CallOption) (*runtimeapi.RemoveContainerResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/RemoveContainer", in, p.srv.RemoveContainer)
}

func (p inProcessRuntime) ListContainers(ctx context.Context, in *runtimeapi.ListContainersRequest, _ ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/ListContainers", in, p.srv.ListContainers)
}

func (p inProcessRuntime) StreamContainers(context.Context, *runtimeapi.StreamContainersRequest, ...grpc.CallOption) (grpc.ServerStreamingClient[runtimeapi.StreamContainersResponse], error) {
	return nil, errUnimplementedInProcess("StreamContainers")
}

func (p inProcessRuntime) ContainerStatus(ctx context.Context, in *runtimeapi.ContainerStatusRequest, _ ...grpc.CallOption) (*runtimeapi.ContainerStatusResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/ContainerStatus", in, p.srv.ContainerStatus)
}

func (p inProcessRuntime) UpdateContainerResources(ctx context.Context, in *runtimeapi.UpdateContainerResourcesRequest, _ ...grpc.CallOption) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/UpdateContainerResources", in, p.srv.UpdateContainerResources)
}

func (p inProcessRuntime) ReopenContainerLog(ctx context.Context, in *runtimeapi.ReopenContainerLogRequest, _ ...grpc.CallOption) (*runtimeapi.ReopenContainerLogResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/ReopenContainerLog", in, p.srv.ReopenContainerLog)
}

func (p inProcessRuntime) ExecSync(ctx context.Context, in *runtimeapi.ExecSyncRequest, _ ...grpc.CallOption) (*runtimeapi.ExecSyncResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/ExecSync", in, p.srv.ExecSync)
}

func (p inProcessRuntime) Exec(ctx context.Context, in *runtimeapi.ExecRequest, _ ...grpc.CallOption) (*runtimeapi.ExecResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/Exec", in, p.srv.Exec)
}

func (p inProcessRuntime) Attach(ctx context.Context, in *runtimeapi.AttachRequest, _ ...grpc.CallOption) (*runtimeapi.AttachResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/Attach", in, p.srv.Attach)
}

func (p inProcessRuntime) PortForward(ctx context.Context, in *runtimeapi.PortForwardRequest, _ ...grpc.CallOption) (*runtimeapi.PortForwardResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/PortForward", in, p.srv.PortForward)
}

func (p inProcessRuntime) ContainerStats(ctx context.Context, in *runtimeapi.ContainerStatsRequest, _ ...grpc.CallOption) (*runtimeapi.ContainerStatsResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/ContainerStats", in, p.srv.ContainerStats)
}

func (p inProcessRuntime) ListContainerStats(ctx context.Context, in *runtimeapi.ListContainerStatsRequest, _ ...grpc.CallOption) (*runtimeapi.ListContainerStatsResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/ListContainerStats", in, p.srv.ListContainerStats)
}

func (p inProcessRuntime) StreamContainerStats(context.Context, *runtimeapi.StreamContainerStatsRequest, ...grpc.CallOption) (grpc.ServerStreamingClient[runtimeapi.StreamContainerStatsResponse], error) {
	return nil, errUnimplementedInProcess("StreamContainerStats")
}

func (p inProcessRuntime) PodSandboxStats(ctx context.Context, in *runtimeapi.PodSandboxStatsRequest, _ ...grpc.CallOption) (*runtimeapi.PodSandboxStatsResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/PodSandboxStats", in, p.srv.PodSandboxStats)
}

func (p inProcessRuntime) ListPodSandboxStats(ctx context.Context, in *runtimeapi.ListPodSandboxStatsRequest, _ ...grpc.CallOption) (*runtimeapi.ListPodSandboxStatsResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/ListPodSandboxStats", in, p.srv.ListPodSandboxStats)
}

func (p inProcessRuntime) StreamPodSandboxStats(context.Context, *runtimeapi.StreamPodSandboxStatsRequest, ...grpc.CallOption) (grpc.ServerStreamingClient[runtimeapi.StreamPodSandboxStatsResponse], error) {
	return nil, errUnimplementedInProcess("StreamPodSandboxStats")
}

func (p inProcessRuntime) UpdateRuntimeConfig(ctx context.Context, in *runtimeapi.UpdateRuntimeConfigRequest, _ ...grpc.CallOption) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/UpdateRuntimeConfig", in, p.srv.UpdateRuntimeConfig)
}

func (p inProcessRuntime) Status(ctx context.Context, in *runtimeapi.StatusRequest, _ ...grpc.CallOption) (*runtimeapi.StatusResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/Status", in, p.srv.Status)
}

func (p inProcessRuntime) CheckpointContainer(ctx context.Context, in *runtimeapi.CheckpointContainerRequest, _ ...grpc.CallOption) (*runtimeapi.CheckpointContainerResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/CheckpointContainer", in, p.srv.CheckpointContainer)
}

func (p inProcessRuntime) CheckpointPod(ctx context.Context, in *runtimeapi.CheckpointPodRequest, _ ...grpc.CallOption) (*runtimeapi.CheckpointPodResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/CheckpointPod", in, p.srv.CheckpointPod)
}

func (p inProcessRuntime) RestorePod(ctx context.Context, in *runtimeapi.RestorePodRequest, _ ...grpc.CallOption) (*runtimeapi.RestorePodResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/RestorePod", in, p.srv.RestorePod)
}

func (p inProcessRuntime) ListMetricDescriptors(ctx context.Context, in *runtimeapi.ListMetricDescriptorsRequest, _ ...grpc.CallOption) (*runtimeapi.ListMetricDescriptorsResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/ListMetricDescriptors", in, p.srv.ListMetricDescriptors)
}

func (p inProcessRuntime) ListPodSandboxMetrics(ctx context.Context, in *runtimeapi.ListPodSandboxMetricsRequest, _ ...grpc.CallOption) (*runtimeapi.ListPodSandboxMetricsResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/ListPodSandboxMetrics", in, p.srv.ListPodSandboxMetrics)
}

func (p inProcessRuntime) StreamPodSandboxMetrics(context.Context, *runtimeapi.StreamPodSandboxMetricsRequest, ...grpc.CallOption) (grpc.ServerStreamingClient[runtimeapi.StreamPodSandboxMetricsResponse], error) {
	return nil, errUnimplementedInProcess("StreamPodSandboxMetrics")
}

func (p inProcessRuntime) RuntimeConfig(ctx context.Context, in *runtimeapi.RuntimeConfigRequest, _ ...grpc.CallOption) (*runtimeapi.RuntimeConfigResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/RuntimeConfig", in, p.srv.RuntimeConfig)
}

func (p inProcessRuntime) UpdatePodSandboxResources(ctx context.Context, in *runtimeapi.UpdatePodSandboxResourcesRequest, _ ...grpc.CallOption) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.RuntimeService/UpdatePodSandboxResources", in, p.srv.UpdatePodSandboxResources)
}

func (p inProcessImages) ListImages(ctx context.Context, in *runtimeapi.ListImagesRequest, _ ...grpc.CallOption) (*runtimeapi.ListImagesResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.ImageService/ListImages", in, p.srv.ListImages)
}

func (p inProcessImages) StreamImages(context.Context, *runtimeapi.StreamImagesRequest, ...grpc.CallOption) (grpc.ServerStreamingClient[runtimeapi.StreamImagesResponse], error) {
	return nil, errUnimplementedInProcess("StreamImages")
}

func (p inProcessImages) ImageStatus(ctx context.Context, in *runtimeapi.ImageStatusRequest, _ ...grpc.CallOption) (*runtimeapi.ImageStatusResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.ImageService/ImageStatus", in, p.srv.ImageStatus)
}

func (p inProcessImages) PullImage(ctx context.Context, in *runtimeapi.PullImageRequest, _ ...grpc.CallOption) (*runtimeapi.PullImageResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.ImageService/PullImage", in, p.srv.PullImage)
}

func (p inProcessImages) RemoveImage(ctx context.Context, in *runtimeapi.RemoveImageRequest, _ ...grpc.CallOption) (*runtimeapi.RemoveImageResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.ImageService/RemoveImage", in, p.srv.RemoveImage)
}

func (p inProcessImages) ImageFsInfo(ctx context.Context, in *runtimeapi.ImageFsInfoRequest, _ ...grpc.CallOption) (*runtimeapi.ImageFsInfoResponse, error) {
	return unary(p.c, ctx, "/runtime.v1.ImageService/ImageFsInfo", in, p.srv.ImageFsInfo)
}
