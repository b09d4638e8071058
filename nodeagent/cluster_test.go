//go:build integration

package nodeagent_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/testenv"
	"github.com/nodekit-dev/nodekit/nodestatus"
)

// tcpProxy forwards 127.0.0.1:port to the apiserver; cut makes the API
// server go away for the agent alone (connections refused and reset),
// without touching the apiserver other packages' tests use.
type tcpProxy struct {
	target, addr string
	mu           sync.Mutex
	l            net.Listener
	conns        map[net.Conn]bool
	wg           sync.WaitGroup
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	p := &tcpProxy{target: target, conns: map[net.Conn]bool{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p.addr = l.Addr().String()
	p.serve(l)
	t.Cleanup(func() { p.cut(); p.wg.Wait() })
	return p
}

func (p *tcpProxy) serve(l net.Listener) {
	p.mu.Lock()
	p.l = l
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[up] = true, true
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); _, _ = io.Copy(up, c); up.Close() }()
			go func() { defer p.wg.Done(); _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
}

func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l != nil {
		p.l.Close()
		p.l = nil
	}
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]bool{}
}

func (p *tcpProxy) restore(t *testing.T) {
	l, err := net.Listen("tcp", p.addr)
	require.NoError(t, err)
	p.serve(l)
}

// TestClusterModeOnContainerd: the agent joins the real kube-apiserver
// with the node's credentials and runs on the real containerd: it
// registers the Node, which becomes Ready; renews its lease; gives its
// static pod a mirror pod carrying the pod's status; runs an API pod to
// Running/Ready as kubectl sees it, with events; kills a deleted pod and
// removes it from the API; rides out a 60 s API server outage with its
// pods running; and registers again after an operator deletes the Node.
func TestClusterModeOnContainerd(t *testing.T) {
	cd := testenv.NeedContainerd(t)
	api := testenv.NeedAPIServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	admin := api.Admin
	const ns = "default"
	staticName, apiName := "static-"+api.Node, "api-web"
	cleanup := func() { // also when the test ends, after ctx: a context of its own
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		grace := int64(0)
		for _, n := range []string{staticName, apiName, "after-outage", "resized"} {
			_ = admin.CoreV1().Pods(ns).Delete(ctx, n, metav1.DeleteOptions{GracePeriodSeconds: &grace})
		}
		_ = admin.CoreV1().ConfigMaps(ns).Delete(ctx, "e2e-cfg", metav1.DeleteOptions{})
		_ = admin.CoreV1().Secrets(ns).Delete(ctx, "e2e-secret", metav1.DeleteOptions{})
		_ = admin.CoreV1().ServiceAccounts(ns).Delete(ctx, "e2e-sa", metav1.DeleteOptions{})
		_ = admin.CoreV1().Nodes().Delete(ctx, api.Node, metav1.DeleteOptions{})
		_ = admin.CoordinationV1().Leases(nodestatus.LeaseNamespace).Delete(ctx, api.Node, metav1.DeleteOptions{})
	}
	cleanup()
	t.Cleanup(cleanup)

	// The agent reaches the apiserver through a proxy the test can cut.
	server, err := url.Parse(api.NodeConfig.Host)
	require.NoError(t, err)
	proxy := newTCPProxy(t, server.Host)
	viaProxy := rest.CopyConfig(api.NodeConfig)
	viaProxy.Host = "https://" + proxy.addr

	port := freePorts(t, 1)[0]
	manifests := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(manifests, "static.yaml"), []byte(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: static, namespace: default}
spec:
  hostNetwork: true
  containers:
  - {name: srv, image: nodekit.local/testbin:1, imagePullPolicy: Never, args: [serve], env: [{name: PORT, value: "%d"}]}
`, port)), 0o644))
	rootDir := t.TempDir()
	cfg := containerdConfig(t, cd, api.Node)
	cfg.Client = apiClient(t, viaProxy)
	cfg.ManifestPath, cfg.RootDir, cfg.SyncFrequency, cfg.CgroupsPerQOS = manifests, rootDir, 2*time.Second, ptr.To(false)
	cfg.FileCheckFrequency, cfg.NodeStatusUpdateFrequency, cfg.LeaseDurationSeconds = 200*time.Millisecond, time.Second, 4
	cfg.Labels = map[string]string{"nodekit.dev/e2e": "yes"}
	cfg.KubeletVersion = "v1.37.2-cluster-test"
	a, stop := startContainerdAgent(t, ctx, cfg)
	defer stop()

	node := func() *v1.Node {
		n, err := admin.CoreV1().Nodes().Get(ctx, api.Node, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return n
	}
	ready := func(n *v1.Node) bool {
		for _, c := range n.Status.Conditions {
			if c.Type == v1.NodeReady {
				return c.Status == v1.ConditionTrue
			}
		}
		return false
	}
	poll.Eventually(t, func() bool { n := node(); return n != nil && ready(n) }, 30*time.Second, 100*time.Millisecond, "node registered and Ready")
	registered := node()
	assert.Equal(t, "yes", registered.Labels["nodekit.dev/e2e"])
	assert.Contains(t, registered.Status.NodeInfo.ContainerRuntimeVersion, "containerd://")
	assert.Equal(t, "v1.37.2-cluster-test", registered.Status.NodeInfo.KubeletVersion)
	assert.Equal(t, "true", registered.Annotations[nodestatus.AnnotationControllerManagedAttach])
	assert.NotEmpty(t, registered.Status.Images, "the runtime's images")

	renewed := func() time.Time {
		l, err := admin.CoordinationV1().Leases(nodestatus.LeaseNamespace).Get(ctx, api.Node, metav1.GetOptions{})
		if err != nil || l.Spec.RenewTime == nil {
			return time.Time{}
		}
		return l.Spec.RenewTime.Time
	}
	poll.Eventually(t, func() bool { return !renewed().IsZero() }, 20*time.Second, 100*time.Millisecond, "lease")

	apiPod := func(name string) *v1.Pod {
		p, err := admin.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return p
	}
	runningReady := func(p *v1.Pod) bool {
		return p != nil && p.Status.Phase == v1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready
	}
	poll.Eventually(t, func() bool {
		p := apiPod(staticName)
		return p != nil && p.Annotations["kubernetes.io/config.mirror"] != "" && runningReady(p)
	}, 30*time.Second, 100*time.Millisecond, "mirror pod Running and Ready")

	webPort := freePorts(t, 1)[0]
	_, err = admin.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "e2e-cfg"},
		Data: map[string]string{"greeting": "hello", "port": fmt.Sprint(webPort)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "e2e-secret"},
		Data: map[string][]byte{"token": []byte("abc")}}, metav1.CreateOptions{})
	require.NoError(t, err)
	// No controller-manager here: the service account is made by hand.
	_, err = admin.CoreV1().ServiceAccounts(ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "e2e-sa"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	labelsFile := v1.DownwardAPIVolumeFile{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}}
	_, err = admin.CoreV1().Pods(ns).Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: apiName, Labels: map[string]string{"app": "web"}},
		Spec: v1.PodSpec{NodeName: api.Node, HostNetwork: true, TerminationGracePeriodSeconds: ptr.To[int64](2), ServiceAccountName: "e2e-sa",
			Volumes: []v1.Volume{
				{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "e2e-cfg"}}}},
				{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "e2e-secret"}}},
				{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{labelsFile}}}},
				{Name: "proj", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
					{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
					{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "e2e-cfg"},
						Items: []v1.KeyToPath{{Key: "greeting", Path: "greeting"}}}},
					{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{
						{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}}}}}},
			Containers: []v1.Container{{Name: "web", Image: "nodekit.local/testbin:1", ImagePullPolicy: v1.PullNever, Args: []string{"serve"},
				VolumeMounts: []v1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}, {Name: "sec", MountPath: "/etc/sec"},
					{Name: "info", MountPath: "/etc/info"}, {Name: "proj", MountPath: "/var/run/secrets/tokens"}},
				// The port comes from the ConfigMap: the pod is Ready only if env from the API worked.
				Env: []v1.EnvVar{{Name: "PORT", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
					LocalObjectReference: v1.LocalObjectReference{Name: "e2e-cfg"}, Key: "port"}}}},
				ReadinessProbe: &v1.Probe{PeriodSeconds: 1, ProbeHandler: v1.ProbeHandler{
					HTTPGet: &v1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt(webPort)}}}}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	poll.Eventually(t, func() bool { return runningReady(apiPod(apiName)) }, 30*time.Second, 100*time.Millisecond, "API pod Running and Ready in the API")
	// The kubelet's pod startup SLI: observed once the watch brings back
	// the status that showed the container started.
	poll.Eventually(t, func() bool { return histogramCount(t, cfg.Gatherer, "kubelet_pod_start_sli_duration_seconds") >= 1 },
		10*time.Second, 100*time.Millisecond, "kubelet_pod_start_sli_duration_seconds observed")
	assert.GreaterOrEqual(t, histogramCount(t, cfg.Gatherer, "kubelet_pod_start_total_duration_seconds"), uint64(1))
	// Each status written (the mirror pod's and the API pod's, several each).
	assert.GreaterOrEqual(t, histogramCount(t, cfg.Gatherer, "kubelet_pod_status_sync_duration_seconds"), uint64(2))
	web := apiPod(apiName)
	assert.Equal(t, "127.0.0.1", web.Status.PodIP)
	volFile := func(plugin, vol, key string) string {
		b, _ := os.ReadFile(filepath.Join(rootDir, "pods", string(web.UID), "volumes", plugin, vol, key))
		return string(b)
	}
	assert.Equal(t, "hello", volFile("kubernetes.io~configmap", "cfg", "greeting"))
	assert.Equal(t, "abc", volFile("kubernetes.io~secret", "sec", "token"))
	assert.Equal(t, `app="web"`, volFile("kubernetes.io~downward-api", "info", "labels"))
	assert.Equal(t, apiName, volFile("kubernetes.io~projected", "proj", "name"))
	assert.Equal(t, "hello", volFile("kubernetes.io~projected", "proj", "greeting"))
	// The token is the API server's, for the pod's service account, bound
	// to the pod.
	review, err := admin.AuthenticationV1().TokenReviews().Create(ctx, &authv1.TokenReview{
		Spec: authv1.TokenReviewSpec{Token: volFile("kubernetes.io~projected", "proj", "token")}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.True(t, review.Status.Authenticated, "token review: %s", review.Status.Error)
	assert.Equal(t, "system:serviceaccount:default:e2e-sa", review.Status.User.Username)
	assert.Equal(t, authv1.ExtraValue{apiName}, review.Status.User.Extra["authentication.kubernetes.io/pod-name"])
	// New labels reach the downwardAPI volume.
	_, err = admin.CoreV1().Pods(ns).Patch(ctx, apiName, types.MergePatchType, []byte(`{"metadata":{"labels":{"tier":"front"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	poll.Eventually(t, func() bool {
		return volFile("kubernetes.io~downward-api", "info", "labels") == "app=\"web\"\ntier=\"front\""
	}, 30*time.Second, 100*time.Millisecond, "new labels in the downwardAPI volume")
	// 500 spec updates (activeDeadlineSeconds set, then lowered: each
	// bumps the generation) converge: the status and every condition the
	// kubelet owns observe the last generation.
	for i := range 499 {
		_, err = admin.CoreV1().Pods(ns).Patch(ctx, apiName, types.MergePatchType,
			fmt.Appendf(nil, `{"spec":{"activeDeadlineSeconds":%d}}`, 100000-i), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	poll.Eventually(t, func() bool {
		p := apiPod(apiName)
		if p == nil || p.Generation != 500 || p.Status.ObservedGeneration != 500 || len(p.Status.Conditions) < 5 {
			return false
		}
		for _, c := range p.Status.Conditions {
			if c.ObservedGeneration != 500 {
				return false
			}
		}
		return runningReady(p)
	}, 30*time.Second, 100*time.Millisecond, "observedGeneration 500 after 500 spec updates, in the status and its conditions")
	// Resized in place through pods/resize: the new limits in the
	// container status, the same container, no resize condition left.
	limits := func(cpu, mem string) v1.ResourceRequirements {
		q := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
		return v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("50m"),
			v1.ResourceMemory: resource.MustParse("32Mi")}, Limits: q}
	}
	_, err = admin.CoreV1().Pods(ns).Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "resized"},
		Spec: v1.PodSpec{NodeName: api.Node, HostNetwork: true, TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []v1.Container{{Name: "c", Image: "nodekit.local/testbin:1", ImagePullPolicy: v1.PullNever,
				Args: []string{"sleep"}, Resources: limits("200m", "128Mi")}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	poll.Eventually(t, func() bool { return runningReady(apiPod("resized")) }, 30*time.Second, 100*time.Millisecond, "pod to resize running")
	before := apiPod("resized").Status.ContainerStatuses[0].ContainerID
	_, err = admin.CoreV1().Pods(ns).Patch(ctx, "resized", types.StrategicMergePatchType,
		[]byte(`{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"300m","memory":"96Mi"}}}]}}`), metav1.PatchOptions{}, "resize")
	require.NoError(t, err)
	poll.Eventually(t, func() bool {
		p := apiPod("resized")
		if p == nil || p.Status.ObservedGeneration != p.Generation || len(p.Status.ContainerStatuses) != 1 {
			return false
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodResizePending || c.Type == v1.PodResizeInProgress {
				return false
			}
		}
		r := p.Status.ContainerStatuses[0].Resources
		return r != nil && r.Limits.Cpu().MilliValue() == 300 && r.Limits.Memory().Value() == 96<<20
	}, 30*time.Second, 100*time.Millisecond, "resize actuated and reported")
	resized := apiPod("resized").Status.ContainerStatuses[0]
	assert.Equal(t, before, resized.ContainerID, "resized in place")
	assert.Equal(t, int32(0), resized.RestartCount)
	assert.Equal(t, "50m", resized.AllocatedResources.Cpu().String())
	cm, err := admin.CoreV1().ConfigMaps(ns).Get(ctx, "e2e-cfg", metav1.GetOptions{})
	require.NoError(t, err)
	cm.Data["greeting"] = "hi"
	_, err = admin.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	poll.Eventually(t, func() bool {
		return volFile("kubernetes.io~configmap", "cfg", "greeting") == "hi"
	}, 30*time.Second, 100*time.Millisecond, "the updated ConfigMap reaches the running pod")
	assert.Contains(t, web.Status.ContainerStatuses[0].ContainerID, "containerd://")
	poll.Eventually(t, func() bool {
		evs, err := admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + apiName})
		require.NoError(t, err)
		for _, e := range evs.Items {
			if e.Reason == "Started" && e.Source.Component == "kubelet" {
				return true
			}
		}
		return false
	}, 20*time.Second, 100*time.Millisecond, "Started event")

	// Deleted with a grace period: killed, then removed from the API.
	require.NoError(t, admin.CoreV1().Pods(ns).Delete(ctx, apiName, metav1.DeleteOptions{}))
	poll.Eventually(t, func() bool {
		_, err := admin.CoreV1().Pods(ns).Get(ctx, apiName, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 30*time.Second, 100*time.Millisecond, "deleted pod gone from the API")
	poll.Eventually(t, func() bool {
		pods, err := a.Runtime().GetPods(ctx, true)
		require.NoError(t, err)
		for _, p := range pods {
			if p.Name == apiName {
				return false
			}
		}
		return true
	}, 20*time.Second, 100*time.Millisecond, "and from containerd")

	// 60 s without the API server: pods keep running, the agent stays
	// healthy. Meanwhile the cluster moves on: the node controller would
	// mark the silent node Unknown, and a pod is bound to it.
	proxy.cut()
	outage := time.Now()
	n := node()
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == v1.NodeReady {
			n.Status.Conditions[i].Status, n.Status.Conditions[i].Reason = v1.ConditionUnknown, "NodeStatusUnknown"
			n.Status.Conditions[i].Message = "Kubelet stopped posting node status."
		}
	}
	_, err = admin.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, err = admin.CoreV1().Pods(ns).Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "after-outage"},
		Spec: v1.PodSpec{NodeName: api.Node, HostNetwork: true, Containers: []v1.Container{{Name: "c",
			Image: "nodekit.local/testbin:1", ImagePullPolicy: v1.PullNever, Args: []string{"sleep"}}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for time.Since(outage) < 60*time.Second {
		time.Sleep(5 * time.Second)
		require.NoError(t, healthz(a), "healthy during the outage")
		p := podNamed(a, staticName)
		require.NotNil(t, p)
		require.Equal(t, v1.PodRunning, p.Status.Phase, "the static pod keeps running")
	}
	proxy.restore(t)
	back := time.Now()
	poll.Eventually(t, func() bool { return renewed().After(back) }, 60*time.Second, 100*time.Millisecond, "lease renewed after the outage")
	poll.Eventually(t, func() bool { return ready(node()) }, 60*time.Second, 100*time.Millisecond, "node Ready again after the outage")
	poll.Eventually(t, func() bool { return runningReady(apiPod("after-outage")) }, 60*time.Second, 100*time.Millisecond, "the pod bound during the outage runs")

	// An operator deletes the Node: the agent registers it again.
	require.NoError(t, admin.CoreV1().Nodes().Delete(ctx, api.Node, metav1.DeleteOptions{}))
	poll.Eventually(t, func() bool {
		n := node()
		return n != nil && n.UID != registered.UID && ready(n)
	}, 30*time.Second, 100*time.Millisecond, "node registered again")
}
