//go:build integration

package nodeagent_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/podstatus"
)

const testbinImage = "nodekit.local/testbin:1"

func testbin(name string, args ...string) v1.Container {
	return v1.Container{Name: name, Image: testbinImage, ImagePullPolicy: v1.PullNever, Args: args}
}

func httpProbe(path string, port int) *v1.Probe {
	return &v1.Probe{PeriodSeconds: 1, FailureThreshold: 30,
		ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: path, Port: intstr.FromInt(port)}}}
}

func podCondition(p *v1.Pod, t v1.PodConditionType) v1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func initStatus(p *v1.Pod, name string) v1.ContainerStatus {
	for _, s := range p.Status.InitContainerStatuses {
		if s.Name == name {
			return s
		}
	}
	return v1.ContainerStatus{}
}

func containerStatus(p *v1.Pod, name string) v1.ContainerStatus {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == name {
			return s
		}
	}
	return v1.ContainerStatus{}
}

func hit(t *testing.T, port int, path string) {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
	require.NoError(t, err)
	resp.Body.Close()
}

// TestSidecarPodsOnContainerd runs the sidecar lifecycle (KEP-753,
// restartable init containers) through the agent on containerd, as the
// API sees it: a sidecar starts in its place among the init containers and
// the next one waits for its startup probe; the pod is Ready only with the
// sidecar ready; a sidecar that exits is restarted while the pod runs; and a
// restartPolicy Never pod completes when its main container does, its
// sidecar stopped after it, and stays Succeeded.
func TestSidecarPodsOnContainerd(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, stop := startClusterAgent(t, ctx)
	defer stop()
	ports := freePorts(t, 2)
	proxyPort, webPort := ports[0], ports[1]

	proxy := testbin("proxy", "serve")
	proxy.RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
	proxy.Env = []v1.EnvVar{{Name: "PORT", Value: fmt.Sprint(proxyPort)}}
	proxy.StartupProbe = httpProbe("/healthz", proxyPort)
	proxy.ReadinessProbe = httpProbe("/readyz", proxyPort)
	proxy.ReadinessProbe.FailureThreshold = 1
	web := testbin("web", "serve")
	web.Env = []v1.EnvVar{{Name: "PORT", Value: fmt.Sprint(webPort)}}
	web.ReadinessProbe = httpProbe("/readyz", webPort)
	c.create("sidecar-web", v1.PodSpec{HostNetwork: true, TerminationGracePeriodSeconds: ptr.To[int64](5),
		InitContainers: []v1.Container{testbin("setup", "exit", "0"), proxy, testbin("after-proxy", "exit", "0")},
		Containers:     []v1.Container{web}})

	ready := func() bool {
		p := c.get("sidecar-web")
		return p.Status.Phase == v1.PodRunning && podCondition(p, v1.PodReady) == v1.ConditionTrue
	}
	poll.Eventually(t, ready, 60*time.Second, 100*time.Millisecond, "the sidecar pod Running and Ready")
	p := c.get("sidecar-web")
	assert.Equal(t, v1.ConditionTrue, podCondition(p, v1.PodInitialized))
	setup, sidecar, after := initStatus(p, "setup"), initStatus(p, "proxy"), initStatus(p, "after-proxy")
	require.NotNil(t, setup.State.Terminated, "setup: %+v", setup)
	require.NotNil(t, sidecar.State.Running, "proxy: %+v", sidecar)
	require.NotNil(t, after.State.Terminated, "after-proxy: %+v", after)
	assert.Equal(t, ptr.To(true), sidecar.Started, "the sidecar's startup probe passed")
	assert.True(t, sidecar.Ready, "the sidecar is ready")
	assert.True(t, setup.Ready, "a completed init container is ready")
	assert.False(t, after.State.Terminated.StartedAt.Before(&sidecar.State.Running.StartedAt),
		"the init container after the sidecar started only once the sidecar had started")
	main := containerStatus(p, "web")
	require.NotNil(t, main.State.Running)
	assert.False(t, main.State.Running.StartedAt.Before(&after.State.Terminated.FinishedAt))

	// The sidecar's readiness counts toward the pod's.
	hit(t, proxyPort, "/readyz/fail")
	poll.Eventually(t, func() bool {
		return podCondition(c.get("sidecar-web"), v1.PodReady) == v1.ConditionFalse
	}, 30*time.Second, 100*time.Millisecond, "the pod not Ready with its sidecar not ready")
	hit(t, proxyPort, "/readyz/ok")
	poll.Eventually(t, ready, 30*time.Second, 100*time.Millisecond, "the pod Ready again")

	// A sidecar that exits is restarted while the pod runs; the main
	// container is left alone.
	hit(t, proxyPort, "/exit?code=1")
	poll.Eventually(t, func() bool {
		p := c.get("sidecar-web")
		s := initStatus(p, "proxy")
		return s.RestartCount >= 1 && s.State.Running != nil && ready()
	}, 60*time.Second, 100*time.Millisecond, "the sidecar restarted, the pod Ready again")
	p = c.get("sidecar-web")
	assert.Equal(t, int32(0), containerStatus(p, "web").RestartCount, "%s", podstatus.Summarize(p.Status))
	assert.Equal(t, int32(0), initStatus(p, "setup").RestartCount, "completed init containers do not run again")

	// A job with a sidecar: done when its main container is; the sidecar
	// is stopped after it and the pod stays Succeeded.
	logger := testbin("logger", "sleep")
	logger.RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
	c.create("sidecar-job", v1.PodSpec{RestartPolicy: v1.RestartPolicyNever, TerminationGracePeriodSeconds: ptr.To[int64](5),
		InitContainers: []v1.Container{logger}, Containers: []v1.Container{testbin("job", "sleep", "2")}})
	poll.Eventually(t, func() bool {
		p := c.get("sidecar-job")
		return p.Status.Phase == v1.PodSucceeded && initStatus(p, "logger").State.Terminated != nil
	}, 60*time.Second, 100*time.Millisecond, "the job Succeeded with its sidecar stopped")
	p = c.get("sidecar-job")
	job, side := containerStatus(p, "job"), initStatus(p, "logger")
	require.NotNil(t, job.State.Terminated)
	assert.Equal(t, int32(0), job.State.Terminated.ExitCode)
	assert.False(t, side.State.Terminated.FinishedAt.Before(&job.State.Terminated.FinishedAt),
		"the sidecar stopped after the main container")
	assert.Never(t, func() bool { // two sync periods: nothing starts again
		p := c.get("sidecar-job")
		return p.Status.Phase != v1.PodSucceeded || initStatus(p, "logger").RestartCount != 0 || containerStatus(p, "job").RestartCount != 0
	}, 4*time.Second, 200*time.Millisecond, "a terminal phase is latched; a finished pod's containers do not start again")
}

// TestAPIPodsAdmittedAsTheKubelet: the predicate admission refuses, with
// the kubelet's reason, a pod the node cannot fit and a pod whose host port
// another pod holds; the refused pods are Failed in the API and never run.
func TestAPIPodsAdmittedAsTheKubelet(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, stop := startClusterAgent(t, ctx)
	defer stop()
	port := int32(freePorts(t, 1)[0])

	big := testbin("c", "sleep")
	big.Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("64")}
	c.create("too-big", v1.PodSpec{Containers: []v1.Container{big}})
	holder := testbin("c", "sleep")
	holder.Ports = []v1.ContainerPort{{ContainerPort: port, HostPort: port}}
	c.create("port-holder", v1.PodSpec{HostNetwork: true, Containers: []v1.Container{holder}})
	poll.Eventually(t, func() bool { return c.get("port-holder").Status.Phase == v1.PodRunning }, 60*time.Second, 100*time.Millisecond, "the port holder running")
	c.create("port-taker", v1.PodSpec{HostNetwork: true, Containers: []v1.Container{holder}})

	for name, reason := range map[string]string{"too-big": "OutOfcpu", "port-taker": "NodePorts"} {
		poll.Eventually(t, func() bool { return c.get(name).Status.Phase == v1.PodFailed }, 30*time.Second, 100*time.Millisecond, name+" rejected")
		p := c.get(name)
		assert.Equal(t, reason, p.Status.Reason, name)
		assert.Contains(t, p.Status.Message, "Pod was rejected: ", name)
		assert.Empty(t, p.Status.ContainerStatuses, "%s never ran", name)
	}
	assert.Contains(t, c.get("too-big").Status.Message, "Node didn't have enough resource: cpu, requested: 64000")
}

// TestTerminationMessagesOnContainerd: what a container writes to its
// terminationMessagePath becomes its terminated state's message; with
// FallbackToLogsOnError a failed container's log tail does. The pods are
// finished (Failed) and stay so, and their logs are still served.
func TestTerminationMessagesOnContainerd(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, stop := startClusterAgent(t, ctx)
	defer stop()
	fallback := testbin("c", "exit", "4")
	fallback.TerminationMessagePolicy = v1.TerminationMessageFallbackToLogsOnError
	custom := testbin("c", "write", "/tmp/my-message", "custom path", "0")
	custom.TerminationMessagePath = "/tmp/my-message"
	for name, ctr := range map[string]v1.Container{"says-bye": testbin("c", "write", "/dev/termination-log", "bye", "3"),
		"falls-back": fallback, "custom-path": custom} {
		c.create(name, v1.PodSpec{RestartPolicy: v1.RestartPolicyNever, Containers: []v1.Container{ctr}})
	}
	for name, want := range map[string]struct {
		phase   v1.PodPhase
		code    int32
		message string
	}{"says-bye": {v1.PodFailed, 3, "bye"}, "falls-back": {v1.PodFailed, 4, "exiting with 4\n"},
		"custom-path": {v1.PodSucceeded, 0, "custom path"}} {
		poll.Eventually(t, func() bool { return c.get(name).Status.Phase == want.phase }, 60*time.Second, 100*time.Millisecond, name+" finished")
		term := containerStatus(c.get(name), "c").State.Terminated
		require.NotNil(t, term, name)
		assert.Equal(t, want.code, term.ExitCode, name)
		assert.Equal(t, want.message, term.Message, name)
	}
	path, err := c.a.LogPath(ctx, "default", "falls-back", "c", false)
	require.NoError(t, err, "a finished pod's logs are served")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(b), "exiting with 4")
}
