package nodestatus

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/kubeapi/clientgo"
)

var leaseResource = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

// leaseEnv is a lease on a fake clientset and a fake clock.
type leaseEnv struct {
	client   *fake.Clientset
	clk      *clocktesting.FakeClock
	lease    *Lease
	failures int // onRepeatedFailure calls
}

func newLeaseEnv(objs ...runtime.Object) *leaseEnv {
	e := &leaseEnv{client: fake.NewClientset(objs...), clk: clocktesting.NewFakeClock(time.Unix(1700000000, 0))}
	e.lease = NewLease(clientgo.Adapt(e.client), "n1", 0, e.clk, func() { e.failures++ })
	return e
}

func (e *leaseEnv) get(t *testing.T) *coordinationv1.Lease {
	t.Helper()
	l, err := e.client.CoordinationV1().Leases(LeaseNamespace).Get(context.Background(), "n1", metav1.GetOptions{})
	require.NoError(t, err)
	return l
}

// verbs are the lease calls made, in order.
func (e *leaseEnv) verbs() []string {
	var out []string
	for _, a := range e.client.Actions() {
		if a.GetResource().Resource == "leases" {
			out = append(out, a.GetVerb())
		}
	}
	return out
}

func TestLeaseIsCreatedRenewedAndOwnedByTheNode(t *testing.T) {
	ctx := context.Background()
	e := newLeaseEnv()
	e.lease.sync(ctx)
	assert.Equal(t, []string{"get", "create"}, e.verbs())
	l := e.get(t)
	assert.Equal(t, "n1", *l.Spec.HolderIdentity)
	assert.Equal(t, int32(40), *l.Spec.LeaseDurationSeconds)
	assert.Equal(t, e.clk.Now(), l.Spec.RenewTime.Time)
	assert.Empty(t, l.OwnerReferences, "no Node yet")

	_, err := e.client.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	e.client.ClearActions()
	e.clk.Step(10 * time.Second)
	e.lease.sync(ctx)
	assert.Equal(t, []string{"update"}, e.verbs(), "renewed from the lease last written")
	l = e.get(t)
	assert.Equal(t, e.clk.Now(), l.Spec.RenewTime.Time)
	assert.Equal(t, []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "node-uid"}}, l.OwnerReferences)
}

func TestLeaseUpdateConflictReadsItAgain(t *testing.T) {
	ctx := context.Background()
	e := newLeaseEnv()
	e.lease.sync(ctx)
	conflicts := 1
	e.client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts == 0 {
			return false, nil, nil
		}
		conflicts--
		return true, nil, apierrors.NewConflict(leaseResource, "n1", errors.New("the object has been modified"))
	})
	e.client.ClearActions()
	e.clk.Step(10 * time.Second)
	e.lease.sync(ctx)
	assert.Equal(t, []string{"update", "get", "update"}, e.verbs(), "the conflict, the read, the update")
	assert.Equal(t, e.clk.Now(), e.get(t).Spec.RenewTime.Time)
	assert.Zero(t, e.failures)
}

func TestLeaseUpdatesThatKeepFailing(t *testing.T) {
	ctx := context.Background()
	e := newLeaseEnv()
	e.lease.sync(ctx)
	e.client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd is down")
	})
	err := e.lease.update(ctx, e.lease.latest)
	assert.EqualError(t, err, "failed 5 attempts to update lease")
	assert.Equal(t, 4, e.failures, "after each failed retry, as the kubelet's controller")

	// sync then falls back to reading the lease, and tries again from it.
	e.client.ClearActions()
	e.lease.sync(ctx)
	assert.Equal(t, []string{"update", "update", "update", "update", "update", "get",
		"update", "update", "update", "update", "update"}, e.verbs())
}

// Reading the lease is retried from 200 ms, doubling, on the injected clock.
func TestLeaseReadIsRetriedWithBackoff(t *testing.T) {
	e := newLeaseEnv()
	failures := 2
	e.client.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if failures == 0 {
			return false, nil, nil
		}
		failures--
		return true, nil, apierrors.NewServiceUnavailable("etcd is down")
	})
	done := make(chan struct{})
	go func() { e.lease.sync(context.Background()); close(done) }()
	for _, wait := range []time.Duration{200 * time.Millisecond, 400 * time.Millisecond} {
		poll.Eventually(t, e.clk.HasWaiters, 5*time.Second, time.Millisecond, "waiting %s", wait)
		e.clk.Step(wait - time.Millisecond)
		assert.True(t, e.clk.HasWaiters(), "still waiting %s", wait)
		e.clk.Step(time.Millisecond)
	}
	<-done
	assert.Equal(t, []string{"get", "get", "get", "create"}, e.verbs())
}

// Run renews at once, then every 10 s (jittered by at most 4%), until ctx
// ends.
func TestLeaseRunRenewsEveryQuarterOfItsDuration(t *testing.T) {
	e := newLeaseEnv()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.lease.Run(ctx); close(done) }()
	poll.Eventually(t, e.clk.HasWaiters, 5*time.Second, time.Millisecond, "first renewal done")
	first := e.get(t).Spec.RenewTime.Time
	e.clk.Step(10*time.Second + 400*time.Millisecond)
	poll.Eventually(t, func() bool { return e.get(t).Spec.RenewTime.After(first) }, 5*time.Second, time.Millisecond, "renewed")
	cancel()
	<-done
}
