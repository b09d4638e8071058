//go:build integration

package hollow_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"

	"github.com/nodekit-dev/nodekit/hollow"
	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/testenv"
	"github.com/nodekit-dev/nodekit/nodestatus"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

func nodeReady(ctx context.Context, c kubernetes.Interface, name string) v1.ConditionStatus {
	n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == v1.NodeReady {
			return cond.Status
		}
	}
	return ""
}

// TestHollowNodesRunPods is the envtest use: a real API server, three
// hollow nodes in the test's process, and pods created with nodeName set
// reaching Running and Ready through client-go, as a controller's test
// would see them. Then the knobs: a crash loop, a failing pull, a node
// made NotReady; and the Nodes go when the context ends.
func TestHollowNodesRunPods(t *testing.T) {
	api := testenv.NeedAPIServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prefix := "hollow-" + rand.String(4) + "-"
	nodes, err := hollow.New(ctx, hollow.Config{Rest: api.AdminConfig, Nodes: 3, NamePrefix: prefix, ServePorts: true,
		Labels: map[string]string{"pool": "hollow"}})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- nodes.Run(ctx) }()
	c := api.Admin
	for _, n := range nodes.Nodes() {
		poll.Eventually(t, func() bool { return nodeReady(ctx, c, n.Name) == v1.ConditionTrue }, 30*time.Second, 100*time.Millisecond, n.Name+" Ready")
		// The lease is the lease controller's, apart from the Node's status:
		// Ready does not mean it is there yet.
		poll.Eventually(t, func() bool {
			_, err := c.CoordinationV1().Leases(nodestatus.LeaseNamespace).Get(ctx, n.Name, metav1.GetOptions{})
			return err == nil
		}, 30*time.Second, 100*time.Millisecond, n.Name+" heartbeats its lease")
	}
	node, err := c.CoreV1().Nodes().Get(ctx, prefix+"1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "hollow", node.Labels["pool"])
	assert.Equal(t, "4", node.Status.Capacity.Cpu().String())
	assert.Equal(t, "110", node.Status.Capacity.Pods().String())

	pods := c.CoreV1().Pods("default")
	create := func(name, node string, ctr v1.Container) {
		t.Helper()
		_, err := pods.Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{ctr}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = pods.Delete(context.Background(), name, *metav1.NewDeleteOptions(0)) })
	}
	web := v1.Container{Name: "web", Image: fake.TestbinImage, Args: []string{"serve"},
		ReadinessProbe: &v1.Probe{PeriodSeconds: 1, ProbeHandler: v1.ProbeHandler{
			HTTPGet: &v1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt(8080)}}}}
	create(prefix+"web", prefix+"1", web)
	create(prefix+"nginx", prefix+"2", v1.Container{Name: "nginx", Image: "nginx:1.27"})
	for _, name := range []string{prefix + "web", prefix + "nginx"} {
		poll.Eventually(t, func() bool {
			p, err := pods.Get(ctx, name, metav1.GetOptions{})
			return err == nil && p.Status.Phase == v1.PodRunning && len(p.Status.ContainerStatuses) == 1 &&
				p.Status.ContainerStatuses[0].Ready
		}, 30*time.Second, 100*time.Millisecond, name+" Running and Ready")
	}
	p, err := pods.Get(ctx, prefix+"web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Regexp(t, `^127\.\d+\.\d+\.\d+$`, p.Status.PodIP, "pod IPs are loopback addresses")

	// Knobs: a crash loop and a failing pull on node 0.
	n0 := nodes.Nodes()[0]
	require.NoError(t, n0.SetBehavior("example.com/crash:1", fake.BehaviorOf(fake.ExitsAfter(0, 3))))
	n0.FailPulls("example.com/broken:1", errors.New("registry says no"))
	create(prefix+"crash", n0.Name, v1.Container{Name: "c", Image: "example.com/crash:1"})
	create(prefix+"broken", n0.Name, v1.Container{Name: "c", Image: "example.com/broken:1"})
	waiting := func(name string) string {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Waiting == nil {
			return ""
		}
		return p.Status.ContainerStatuses[0].State.Waiting.Reason
	}
	poll.Eventually(t, func() bool { return waiting(prefix+"crash") == "CrashLoopBackOff" }, 60*time.Second, 100*time.Millisecond, "the crash loop")
	poll.Eventually(t, func() bool {
		r := waiting(prefix + "broken")
		return r == "ErrImagePull" || r == "ImagePullBackOff"
	}, 60*time.Second, 100*time.Millisecond, "the failing pull")

	// NotReady on demand.
	n2 := nodes.Nodes()[2]
	n2.SetReady(false)
	poll.Eventually(t, func() bool { return nodeReady(ctx, c, n2.Name) == v1.ConditionFalse }, 30*time.Second, 100*time.Millisecond, n2.Name+" NotReady")
	n2.SetReady(true)
	poll.Eventually(t, func() bool { return nodeReady(ctx, c, n2.Name) == v1.ConditionTrue }, 30*time.Second, 100*time.Millisecond, n2.Name+" Ready again")

	cancel()
	require.NoError(t, <-done)
	for _, n := range nodes.Nodes() {
		_, err := c.CoreV1().Nodes().Get(context.Background(), n.Name, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "%s removed when the context ended: %v", n.Name, err)
	}
}
