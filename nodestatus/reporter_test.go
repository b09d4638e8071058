package nodestatus

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/kubeapi/clientgo"
)

func patches(c *fake.Clientset) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == "patch" && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

func TestRegisterCreatesOrTakesOver(t *testing.T) {
	ctx := context.Background()
	n, _ := newNode(t, func(c *Config) { c.Labels = map[string]string{"team": "a"} })

	client := fake.NewClientset()
	created, err := n.Register(ctx, clientgo.Adapt(client))
	require.NoError(t, err)
	assert.Equal(t, "a", created.Labels["team"])

	// An existing Node with stale kubelet labels and someone else's label.
	client = fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1",
		Labels: map[string]string{"kubernetes.io/hostname": "old-host", "keep": "me"}}})
	got, err := n.Register(ctx, clientgo.Adapt(client))
	require.NoError(t, err)
	assert.Equal(t, "node-1", got.Labels["kubernetes.io/hostname"], "the kubelet's labels are brought back")
	assert.Equal(t, "me", got.Labels["keep"], "others' labels are kept")
	assert.Empty(t, got.Labels["team"], "--node-labels apply on creation only, as in the kubelet")
	assert.Equal(t, "127.0.0.1", got.Status.Addresses[0].Address, "status refreshed")
	assert.Equal(t, "true", created.Annotations[AnnotationControllerManagedAttach], "the attach-detach controller attaches")
	assert.Equal(t, "true", got.Annotations[AnnotationControllerManagedAttach], "on a taken-over Node too")

	// --enable-controller-attach-detach=false takes the annotation away.
	off, _ := newNode(t, func(c *Config) { c.ControllerManagedAttachDetach = ptr.To(false) })
	got, err = off.Register(ctx, clientgo.Adapt(fake.NewClientset(got)))
	require.NoError(t, err)
	assert.NotContains(t, got.Annotations, AnnotationControllerManagedAttach)
}

func TestReporterPatchesOnChangeOrEveryReportFrequency(t *testing.T) {
	ctx := context.Background()
	var checkErr error
	n, clk := newNode(t, func(c *Config) {
		c.ReadyChecks = []Check{func(context.Context) error { return checkErr }}
	})
	client := fake.NewClientset()
	r, err := NewReporter(ReporterConfig{Client: clientgo.Adapt(client), Node: n, Clock: clk})
	require.NoError(t, err)
	require.NoError(t, r.register(ctx))

	for _, step := range []struct {
		name    string
		advance time.Duration
		err     error
		patched bool
	}{
		{"nothing changed", 10 * time.Second, nil, false},
		{"still nothing", 10 * time.Second, nil, false},
		{"runtime down: Ready changes", 10 * time.Second, errors.New("container runtime is down"), true},
		{"same failure", 10 * time.Second, errors.New("container runtime is down"), false},
		{"report frequency reached", 5 * time.Minute, errors.New("container runtime is down"), true},
	} {
		before := patches(client)
		clk.Step(step.advance)
		checkErr = step.err
		require.NoError(t, r.Sync(ctx), step.name)
		assert.Equal(t, step.patched, patches(client) > before, step.name)
	}
	node, err := client.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1.ConditionFalse, condition(node, v1.NodeReady).Status)
	assert.Equal(t, "container runtime is down", condition(node, v1.NodeReady).Message)
}

func TestReporterRegistersAgainWhenTheNodeIsDeleted(t *testing.T) {
	ctx := context.Background()
	n, clk := newNode(t, nil)
	client := fake.NewClientset()
	r, err := NewReporter(ReporterConfig{Client: clientgo.Adapt(client), Node: n, Clock: clk})
	require.NoError(t, err)
	require.NoError(t, r.register(ctx))
	require.NoError(t, client.CoreV1().Nodes().Delete(ctx, "node-1", metav1.DeleteOptions{}))
	require.NoError(t, r.Sync(ctx))
	_, err = client.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	assert.NoError(t, err, "registered again")
}

func TestReporterRetriesFiveTimes(t *testing.T) {
	ctx := context.Background()
	n, clk := newNode(t, nil)
	client := fake.NewClientset()
	r, err := NewReporter(ReporterConfig{Client: clientgo.Adapt(client), Node: n, Clock: clk})
	require.NoError(t, err)
	require.NoError(t, r.register(ctx))
	gets := 0
	client.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		gets++
		return true, nil, errors.New("apiserver unavailable")
	})
	err = r.Sync(ctx)
	assert.ErrorContains(t, err, "update node status exceeds retry count")
	assert.ErrorContains(t, err, "apiserver unavailable")
	assert.Equal(t, 5, gets)
}

func TestRunRegistersWithBackoffAndStops(t *testing.T) {
	n, clk := newNode(t, nil)
	client := fake.NewClientset()
	fails := 3
	client.PrependReactor("create", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fails > 0 {
			fails--
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	r, err := NewReporter(ReporterConfig{Client: clientgo.Adapt(client), Node: n, Clock: clk})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx) }()
	for _, wait := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
		poll.Eventually(t, func() bool { return clk.HasWaiters() }, 5*time.Second, time.Millisecond)
		clk.Step(wait)
	}
	poll.Eventually(t, r.Registered, 5*time.Second, time.Millisecond)
	cancel()
	assert.NoError(t, <-done)
}

func TestNewReporterValidates(t *testing.T) {
	_, err := NewReporter(ReporterConfig{})
	assert.EqualError(t, err, "nodestatus: ReporterConfig.Client is nil")
	_, err = NewReporter(ReporterConfig{Client: clientgo.Adapt(fake.NewClientset())})
	assert.EqualError(t, err, "nodestatus: ReporterConfig.Node is nil")
}

// kubelet fastStatusUpdateOnce: a node registered NotReady (its runtime
// was not up yet) reports Ready within 100ms of it becoming so, not at the
// first 10s tick.
func TestRunReportsReadyAtOnceAfterRegistering(t *testing.T) {
	var mu sync.Mutex
	checkErr := errors.New("container runtime is down")
	n, clk := newNode(t, func(c *Config) {
		c.ReadyChecks = []Check{func(context.Context) error { mu.Lock(); defer mu.Unlock(); return checkErr }}
	})
	client := fake.NewClientset()
	r, err := NewReporter(ReporterConfig{Client: clientgo.Adapt(client), Node: n, Clock: clk})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx) }()
	defer func() { cancel(); assert.NoError(t, <-done) }()
	poll.Eventually(t, r.Registered, 5*time.Second, time.Millisecond)
	ready := func() v1.ConditionStatus {
		node, err := client.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
		require.NoError(t, err)
		return condition(node, v1.NodeReady).Status
	}
	require.Equal(t, v1.ConditionFalse, ready(), "registered NotReady")
	for range 3 { // not Ready yet: nothing written
		poll.Eventually(t, clk.HasWaiters, 5*time.Second, time.Millisecond)
		clk.Step(100 * time.Millisecond)
	}
	assert.Zero(t, patches(client))
	mu.Lock()
	checkErr = nil
	mu.Unlock()
	poll.Eventually(t, clk.HasWaiters, 5*time.Second, time.Millisecond)
	clk.Step(100 * time.Millisecond)
	poll.Eventually(t, func() bool { return ready() == v1.ConditionTrue }, 5*time.Second, time.Millisecond,
		"Ready written 400ms after registering, well before the 10s tick")
}
