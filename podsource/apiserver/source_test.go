package apiserver

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/kubeapi/clientgo"
	"github.com/nodekit-dev/nodekit/podsource"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

func apiPod(name, nodeName string, uid types.UID) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns1", UID: uid,
			Annotations: map[string]string{"user": "x"}},
		Spec: v1.PodSpec{NodeName: nodeName, Containers: []v1.Container{{Name: "c", Image: "img:1"}}},
	}
}

func TestConvertPod(t *testing.T) {
	p := apiPod("a", node, "uid-a")
	p.Annotations = nil
	out := ConvertPod(p)
	assert.Equal(t, podsource.SourceAPI, out.Annotations[podsource.ConfigSourceAnnotation])
	assert.Nil(t, p.Annotations, "the input is not modified")
	assert.Equal(t, p.UID, out.UID)
	assert.Equal(t, "a", out.Name, "no node suffix")
	assert.Equal(t, "ns1", out.Namespace)
	_, hasHash := out.Annotations[podsource.ConfigHashAnnotation]
	assert.False(t, hasHash, "no kubelet defaults")
	assert.Empty(t, out.Spec.Tolerations)
}

func TestNewValidates(t *testing.T) {
	mux := podsource.NewMux(podsource.MuxConfig{})
	_, err := New(Config{NodeName: node}, mux)
	assert.Error(t, err)
	_, err = New(Config{Client: clientgo.Adapt(fake.NewClientset())}, mux)
	assert.Error(t, err)
	s, err := New(Config{Client: clientgo.Adapt(fake.NewClientset()), NodeName: node}, mux)
	require.NoError(t, err)
	assert.Equal(t, "api", s.Name())
}

// recvUntil reads the mux until cond holds for the updates of source src,
// or fails after a deadline.
func recvUntil(t *testing.T, mux *podsource.Mux, d time.Duration, cond func(podsource.PodUpdate) bool) podsource.PodUpdate {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case u := <-mux.Updates():
			if cond(u) {
				return u
			}
		case <-timer.C:
			t.Fatalf("no matching update within %v", d)
			return podsource.PodUpdate{}
		}
	}
}

func TestSourceFake(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The fake ignores field selectors: the source must filter by itself.
	withFields := apiPod("a", node, "uid-a")
	withFields.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}}
	client := fake.NewClientset(withFields, apiPod("other", "node-2", "uid-o"))
	mux := podsource.NewMux(podsource.MuxConfig{})
	src, err := New(Config{Client: clientgo.Adapt(client), NodeName: node, Metrics: podsource.NewMetrics()}, mux)
	require.NoError(t, err)
	mux.Register(src.Name())
	assert.False(t, mux.SourcesReady("api"))

	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); assert.NoError(t, src.Run(ctx)) }()
	defer wg.Wait()
	defer cancel()

	u := recvUntil(t, mux, 10*time.Second, func(u podsource.PodUpdate) bool { return u.Op == podsource.ADD })
	require.Len(t, u.Pods, 1)
	p := u.Pods[0]
	assert.Equal(t, "a", p.Name)
	assert.Equal(t, "ns1", p.Namespace)
	assert.Equal(t, types.UID("uid-a"), p.UID)
	assert.Equal(t, podsource.SourceAPI, p.Annotations[podsource.ConfigSourceAnnotation])
	assert.Equal(t, "x", p.Annotations["user"])
	assert.Empty(t, p.ManagedFields, "nothing on a node reads managedFields: not kept")
	seen := p.Annotations[podsource.ConfigSeenAnnotation]
	assert.NotEmpty(t, seen, "the source stamps config.seen, so the mux needs no copy")
	// Ready once the first set is on the channel: after the send seen here.
	poll.Eventually(t, func() bool { return mux.SourcesReady("api") }, 5*time.Second, time.Millisecond, "ready after the first list")
	assert.True(t, src.HasSynced())
	// The object in the "API" is untouched.
	stored, err := client.CoreV1().Pods("ns1").Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, stored.Annotations, podsource.ConfigSourceAnnotation)

	// Label change: podsource.UPDATE.
	stored.Labels = map[string]string{"l": "1"}
	_, err = client.CoreV1().Pods("ns1").Update(ctx, stored, metav1.UpdateOptions{})
	require.NoError(t, err)
	u = recvUntil(t, mux, 10*time.Second, func(u podsource.PodUpdate) bool { return u.Op != podsource.RECONCILE })
	assert.Equal(t, podsource.UPDATE, u.Op)
	assert.Equal(t, []string{"a"}, names(u.Pods))
	assert.Equal(t, seen, u.Pods[0].Annotations[podsource.ConfigSeenAnnotation], "the first sight, on the update's new object")

	// Status change only: podsource.RECONCILE.
	stored, err = client.CoreV1().Pods("ns1").Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	stored.Status.Phase = v1.PodRunning
	_, err = client.CoreV1().Pods("ns1").UpdateStatus(ctx, stored, metav1.UpdateOptions{})
	require.NoError(t, err)
	u = recvUntil(t, mux, 10*time.Second, func(podsource.PodUpdate) bool { return true })
	assert.Equal(t, podsource.RECONCILE, u.Op)

	// Another node's pod added later: nothing; a second own pod: podsource.ADD.
	_, err = client.CoreV1().Pods("ns1").Create(ctx, apiPod("other2", "node-2", "uid-o2"), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = client.CoreV1().Pods("ns1").Create(ctx, apiPod("b", node, "uid-b"), metav1.CreateOptions{})
	require.NoError(t, err)
	u = recvUntil(t, mux, 10*time.Second, func(podsource.PodUpdate) bool { return true })
	assert.Equal(t, podsource.ADD, u.Op)
	assert.Equal(t, []string{"b"}, names(u.Pods))

	// Delete: podsource.REMOVE.
	require.NoError(t, client.CoreV1().Pods("ns1").Delete(ctx, "a", metav1.DeleteOptions{}))
	u = recvUntil(t, mux, 10*time.Second, func(podsource.PodUpdate) bool { return true })
	assert.Equal(t, podsource.REMOVE, u.Op)
	assert.Equal(t, []string{"a"}, names(u.Pods))
	assert.Equal(t, []string{"b"}, names(mux.Pods()))

	assert.Error(t, src.Run(ctx), "a second concurrent Run is refused")
	cancel()
	wg.Wait()
	assert.Equal(t, []types.UID{"uid-b"}, slices.Collect(maps.Keys(src.seen)), "a deleted pod's first sight is forgotten")
}

// A watch may hand the source objects that others still read (client-go's
// fake clientset does so for objects added between its List and Watch): the
// source prepares its own copy, never the object it was given.
func TestSourceLeavesWatchedObjectsAlone(t *testing.T) {
	client := fake.NewClientset()
	w := watch.NewFake()
	client.PrependWatchReactor("pods", func(clienttesting.Action) (bool, watch.Interface, error) { return true, w, nil })
	mux := runFakeSource(t, Config{Client: clientgo.Adapt(client), NodeName: node, Metrics: podsource.NewMetrics()})

	shared := apiPod("a", node, "uid-a")
	shared.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	want := shared.DeepCopy()
	w.Add(shared)
	u := recvUntil(t, mux, 10*time.Second, func(u podsource.PodUpdate) bool { return u.Op == podsource.ADD && len(u.Pods) > 0 })
	require.Equal(t, []string{"a"}, names(u.Pods))
	assert.NotEmpty(t, u.Pods[0].Annotations[podsource.ConfigSeenAnnotation])
	assert.Equal(t, want, shared, "the watched object is unchanged")
}

// While the API server refuses connections the reflector retries the
// watch at most 10 s apart (kubeapi.WatchBackoff), not the [30, 60) s of
// client-go's default: a pod created just after an outage is seen within
// seconds. Each retry must come within one 10 s step of the clock.
func TestSourceRetriesAnOutageWithinTenSeconds(t *testing.T) {
	const failures = 9 // past the schedule's cap: 0.8, 1.6, 3.2, then 5 s, jittered
	client := fake.NewClientset()
	w := watch.NewFake()
	var mu sync.Mutex
	watches := 0
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	client.PrependWatchReactor("pods", func(clienttesting.Action) (bool, watch.Interface, error) {
		mu.Lock()
		defer mu.Unlock()
		if watches++; watches <= failures {
			return true, nil, refused
		}
		return true, w, nil
	})
	calls := func() int { mu.Lock(); defer mu.Unlock(); return watches }
	clk := clocktesting.NewFakeClock(time.Now())
	metrics := podsource.NewMetrics()
	mux := runFakeSource(t, Config{Client: clientgo.Adapt(client), NodeName: node, Clock: clk, Metrics: metrics})

	for i := 1; i <= failures; i++ {
		poll.Eventually(t, func() bool { return calls() >= i && clk.HasWaiters() }, 5*time.Second, time.Millisecond,
			"watch attempt %d refused, the reflector waiting to retry", i)
		clk.Step(10 * time.Second)
	}
	poll.Eventually(t, func() bool { return calls() > failures }, 5*time.Second, time.Millisecond,
		"the watch retried within 10 s of its last refusal")
	w.Add(apiPod("after-outage", node, "uid-after"))
	u := recvUntil(t, mux, 10*time.Second, func(u podsource.PodUpdate) bool { return u.Op == podsource.ADD && len(u.Pods) > 0 })
	assert.Equal(t, []string{"after-outage"}, names(u.Pods))
	want := fmt.Sprintf(`# HELP podsource_fetch_errors_total Failed reads of a source (URL fetch, directory read); the last good set was kept.
# TYPE podsource_fetch_errors_total counter
podsource_fetch_errors_total{source="api"} %d
`, failures)
	assert.NoError(t, testutil.CollectAndCompare(metrics, strings.NewReader(want), "podsource_fetch_errors_total"), "each refusal counted")
}

// runFakeSource runs a Source of cfg, sending to a new mux, until the test
// ends.
func runFakeSource(t *testing.T, cfg Config) *podsource.Mux {
	ctx, cancel := context.WithCancel(context.Background())
	mux := podsource.NewMux(podsource.MuxConfig{})
	src, err := New(cfg, mux)
	require.NoError(t, err)
	mux.Register(src.Name())
	done := make(chan struct{})
	go func() { defer close(done); assert.NoError(t, src.Run(ctx)) }()
	t.Cleanup(func() { cancel(); <-done })
	return mux
}
