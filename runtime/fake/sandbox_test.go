package fake

import (
	"context"
	"encoding/json"
	"net"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestRunPodSandboxValidation(t *testing.T) {
	r, _ := newTest(t)
	runPod(t, r, podConfig("taken"))
	noUID := podConfig("x")
	noUID.Metadata.Uid = ""
	noNS := podConfig("x")
	noNS.Metadata.Namespace = ""
	noName := podConfig("x")
	noName.Metadata.Name = ""

	tests := []struct {
		name     string
		req      *runtimeapi.RunPodSandboxRequest
		code     codes.Code
		contains string
	}{
		{"no config", &runtimeapi.RunPodSandboxRequest{}, codes.Unknown, "must include metadata"},
		{"no metadata", &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{}}, codes.Unknown, "must include metadata"},
		{"no name", &runtimeapi.RunPodSandboxRequest{Config: noName}, codes.InvalidArgument, "name"},
		{"no namespace", &runtimeapi.RunPodSandboxRequest{Config: noNS}, codes.InvalidArgument, "namespace"},
		{"no uid", &runtimeapi.RunPodSandboxRequest{Config: noUID}, codes.InvalidArgument, "uid"},
		{"unknown handler", &runtimeapi.RunPodSandboxRequest{Config: podConfig("h"), RuntimeHandler: "kata"}, codes.Unknown, `no runtime for "kata" is configured`},
		{"hostname on the node network", &runtimeapi.RunPodSandboxRequest{Config: func() *runtimeapi.PodSandboxConfig {
			c := hostNetwork(podConfig("hn"))
			c.Hostname = "hn"
			return c
		}()}, codes.Unknown, "unable to set hostname without a private UTS namespace"},
		{"duplicate name", &runtimeapi.RunPodSandboxRequest{Config: podConfig("taken")}, codes.Unknown, `name "taken_default_uid-taken_0" is reserved for`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.RunPodSandbox(context.Background(), tt.req)
			requireCode(t, err, tt.code, tt.contains)
		})
	}
}

func TestPodSandboxStatus(t *testing.T) {
	r, _ := newTest(t)
	cfg := podConfig("web")
	cfg.Annotations = map[string]string{"a": "b"}
	id := runPod(t, r, cfg)
	require.Regexp(t, regexp.MustCompile(`^[0-9a-f]{64}$`), id)

	resp, err := r.PodSandboxStatus(context.Background(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: true})
	require.NoError(t, err)
	st := resp.Status
	assert.Equal(t, id, st.Id)
	assert.Equal(t, "web", st.Metadata.Name)
	assert.Equal(t, runtimeapi.PodSandboxState_SANDBOX_READY, st.State)
	assert.Equal(t, epoch.UnixNano(), st.CreatedAt)
	assert.Equal(t, "127.1.0.1", st.Network.Ip)
	assert.Equal(t, map[string]string{"app": "web"}, st.Labels)
	assert.Equal(t, map[string]string{"a": "b"}, st.Annotations)
	require.NotNil(t, st.Linux.Namespaces)
	var info map[string]any
	require.NoError(t, json.Unmarshal([]byte(resp.Info["info"]), &info))
	assert.Equal(t, "running", info["processStatus"])

	quiet, err := r.PodSandboxStatus(context.Background(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
	require.NoError(t, err)
	assert.Empty(t, quiet.Info, "info only when verbose")

	// Distinct loopback IPs; none for the node network.
	other := sandboxStatus(t, r, runPod(t, r, podConfig("other")))
	assert.Equal(t, "127.1.0.2", other.Network.Ip)
	assert.True(t, net.ParseIP(other.Network.Ip).IsLoopback())
	host := sandboxStatus(t, r, runPod(t, r, hostNetwork(podConfig("host"))))
	assert.Empty(t, host.Network.Ip)
	assert.Equal(t, runtimeapi.NamespaceMode_NODE, host.Linux.Namespaces.Options.Network)

	// Unique prefixes work; unknown IDs are NotFound.
	assert.Equal(t, id, sandboxStatus(t, r, id[:12]).Id)
	_, err = r.PodSandboxStatus(context.Background(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: "nope"})
	requireCode(t, err, codes.NotFound, "not found")

	// Stopped: NOTREADY and, like containerd, no IP any more.
	_, err = r.StopPodSandbox(context.Background(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
	require.NoError(t, err)
	st = sandboxStatus(t, r, id)
	assert.Equal(t, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, st.State)
	assert.Empty(t, st.Network.Ip)
}

func TestWithPodIPs(t *testing.T) {
	r, _ := newTest(t, WithPodIPs(func(n int) string { return net.IPv4(127, 9, 0, byte(n)).String() }))
	assert.Equal(t, "127.9.0.1", sandboxStatus(t, r, runPod(t, r, podConfig("a"))).Network.Ip)
	assert.Equal(t, "127.9.0.2", sandboxStatus(t, r, runPod(t, r, podConfig("b"))).Network.Ip)
}

func TestLoopbackPodIP(t *testing.T) {
	for n, want := range map[int]string{1: "127.1.0.1", 254: "127.1.0.254", 255: "127.1.1.1", 254*256 + 1: "127.2.0.1"} {
		assert.Equal(t, want, loopbackPodIP(n), "n=%d", n)
	}
}

func TestListPodSandboxFilters(t *testing.T) {
	r, _ := newTest(t)
	a := runPod(t, r, podConfig("a"))
	b := runPod(t, r, podConfig("b"))
	_, err := r.StopPodSandbox(context.Background(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: b})
	require.NoError(t, err)

	ready := &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}
	tests := []struct {
		name   string
		filter *runtimeapi.PodSandboxFilter
		want   []string
	}{
		{"none", nil, []string{a, b}},
		{"empty", &runtimeapi.PodSandboxFilter{}, []string{a, b}},
		{"id", &runtimeapi.PodSandboxFilter{Id: b}, []string{b}},
		{"id prefix", &runtimeapi.PodSandboxFilter{Id: a[:8]}, []string{a}},
		{"unknown id", &runtimeapi.PodSandboxFilter{Id: "zz"}, nil},
		{"state", &runtimeapi.PodSandboxFilter{State: ready}, []string{a}},
		{"labels", &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"app": "b"}}, []string{b}},
		{"labels all must match", &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"app": "b", "x": "y"}}, nil},
		{"id and state", &runtimeapi.PodSandboxFilter{Id: b, State: ready}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := r.ListPodSandbox(context.Background(), &runtimeapi.ListPodSandboxRequest{Filter: tt.filter})
			require.NoError(t, err)
			var got []string
			for _, s := range resp.Items {
				got = append(got, s.Id)
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestStopAndRemovePodSandbox(t *testing.T) {
	r, _ := newTest(t)
	ctx := context.Background()
	cfg := podConfig("p")
	sb := runPod(t, r, cfg)
	running := create(t, r, sb, cfg, testbin("serve"))
	start(t, r, running)
	created := create(t, r, sb, cfg, testbin("later"))

	for range 2 { // idempotent
		_, err := r.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb})
		require.NoError(t, err)
	}
	st := containerStatus(t, r, running)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st.State)
	assert.Equal(t, int32(137), st.ExitCode, "force-stopped with SIGKILL")
	assert.Equal(t, "Error", st.Reason)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_CREATED, containerStatus(t, r, created).State)

	_, err := r.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb, SandboxConfig: cfg, Config: testbin("new")})
	requireCode(t, err, codes.NotFound, "no running task found")
	_, err = r.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: created})
	requireCode(t, err, codes.Unknown, "is not running")
	st = containerStatus(t, r, created)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st.State, "a failed start leaves the container exited")
	assert.Equal(t, "StartError", st.Reason)
	assert.Equal(t, int32(128), st.ExitCode)

	_, err = r.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb})
	require.NoError(t, err)
	list, err := r.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	require.NoError(t, err)
	assert.Empty(t, list.Containers)
	_, err = r.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb})
	requireCode(t, err, codes.NotFound, "")

	// Gone: removing again succeeds, stopping is NotFound (containerd
	// 1.6.20), and the name is free.
	_, err = r.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb})
	require.NoError(t, err)
	_, err = r.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb})
	requireCode(t, err, codes.NotFound, "an error occurred when try to find sandbox")
	runPod(t, r, cfg)
}

func TestRemoveReadyPodSandbox(t *testing.T) {
	r, _ := newTest(t)
	sb, id := run(t, r, testbin("app"))
	_, err := r.RemovePodSandbox(context.Background(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb})
	require.NoError(t, err)
	_, err = r.ContainerStatus(context.Background(), &runtimeapi.ContainerStatusRequest{ContainerId: id})
	requireCode(t, err, codes.NotFound, "")
}
