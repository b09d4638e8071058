package kuberuntime_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/runtime"
)

// Bugs a new user met (#14), each pinned by a test that failed before.

func TestSyncPodErrorsWrapTheRuntimeCause(t *testing.T) {
	e := newManagerEnv(t)
	const image = "nodekit.local/missing:1"
	e.fake.SetPullBehavior(image, 0, status.Error(codes.Unavailable, "registry mirror down"))
	pod := podSpec("pull", v1.RestartPolicyAlways, v1.Container{Name: "c", Image: image, ImagePullPolicy: v1.PullAlways})
	res, _ := e.sync(pod, nil)
	err := res.Err()
	require.Error(t, err)
	assert.ErrorIs(t, err, kuberuntime.ErrImagePull, "the step's kind")
	assert.ErrorIs(t, err, runtime.ErrUnavailable, "and, under it, the CRI's cause")
	assert.Contains(t, err.Error(), "registry mirror down")
}

func TestContainerConfigsDoNotShareMaskedPaths(t *testing.T) {
	e := newManagerEnv(t)
	pod := podSpec("masks", v1.RestartPolicyAlways, v1.Container{Name: "a", Image: testImage}, v1.Container{Name: "b", Image: testImage})
	first, err := e.m.ContainerConfig(pod, &pod.Spec.Containers[0], kuberuntime.ContainerInput{})
	require.NoError(t, err)
	sc := first.Linux.SecurityContext
	require.NotEmpty(t, sc.MaskedPaths)
	require.NotEmpty(t, sc.ReadonlyPaths)
	sc.MaskedPaths[0], sc.ReadonlyPaths[0] = "/edited", "/edited"
	sc.MaskedPaths = append(sc.MaskedPaths[:1], "/appended")

	second, err := e.m.ContainerConfig(pod, &pod.Spec.Containers[1], kuberuntime.ContainerInput{})
	require.NoError(t, err)
	assert.NotContains(t, second.Linux.SecurityContext.MaskedPaths, "/edited")
	assert.NotContains(t, second.Linux.SecurityContext.ReadonlyPaths, "/edited")
	assert.NotContains(t, second.Linux.SecurityContext.MaskedPaths, "/appended")
}

func hookPod(name, host string, port int, scheme v1.URIScheme) *v1.Pod {
	return podSpec(name, v1.RestartPolicyAlways, v1.Container{Name: "c", Image: testImage, Args: []string{"serve"},
		Lifecycle: &v1.Lifecycle{PostStart: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{
			Host: host, Port: intstr.FromInt(port), Path: "/hook", Scheme: scheme}}}})
}

func serverPort(t *testing.T, s *httptest.Server) int {
	_, port, err := net.SplitHostPort(s.Listener.Addr().String())
	require.NoError(t, err)
	p, err := strconv.Atoi(port)
	require.NoError(t, err)
	return p
}

// As the kubelet's: a pod's self-signed certificate is not checked.
func TestHTTPSHookAcceptsSelfSignedCertificate(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	e := newManagerEnv(t)
	res, _ := e.sync(hookPod("tls", "127.0.0.1", serverPort(t, srv), v1.URISchemeHTTPS), nil)
	require.NoError(t, res.Err())
	assert.Equal(t, int32(1), hits.Load())
}

// A redirect to another host is not followed: a hook goes to the pod only.
func TestHTTPHookDoesNotFollowRedirectsToOtherHosts(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	l, err := net.Listen("tcp", "127.0.0.2:0")
	require.NoError(t, err, "127.0.0.2 is loopback on Linux")
	other.Listener = l
	other.Start()
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/elsewhere", http.StatusFound)
	}))
	defer srv.Close()

	e := newManagerEnv(t)
	res, _ := e.sync(hookPod("redirect", "127.0.0.1", serverPort(t, srv), v1.URISchemeHTTP), nil)
	require.NoError(t, res.Err(), "a 302 is a success, as any status below 400")
	assert.Zero(t, elsewhere.Load(), "the other host was not called")
}

// An unwritable PodLogsDir fails in NewManager, naming the field.
func TestNewManagerChecksPodLogsDir(t *testing.T) {
	_, client := startFake(t)
	_, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: client, PodLogsDir: "/proc/nodekit-logs"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `PodLogsDir "/proc/nodekit-logs"`)
}
