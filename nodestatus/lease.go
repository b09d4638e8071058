package nodestatus

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/kubeapi"
)

// The kubelet's node lease.
const (
	LeaseNamespace              = v1.NamespaceNodeLease // kube-node-lease
	DefaultLeaseDurationSeconds = 40                    // --node-lease-duration-seconds
	// The lease is renewed every quarter of its duration (10s).
	leaseRenewFraction = 0.25
	// The lease controller's: renewals jittered by 4%, five updates in a
	// row before giving up until the next renewal, lease reads retried
	// from 200 ms doubling to 7 s.
	leaseRenewJitter      = 0.04
	leaseMaxUpdateRetries = 5
	leaseFirstBackoff     = 200 * time.Millisecond
	leaseMaxBackoff       = 7 * time.Second
)

// NodesGetter is the part of the API client that registers, reports and
// watches the Node: a kubeapi.Interface, or a client-go clientset through
// kubeapi/clientgo.Adapt.
type NodesGetter interface {
	Nodes() kubeapi.StatusClient[*v1.Node, *v1.NodeList]
}

// LeaseClient is the part of the API client the lease calls.
type LeaseClient interface {
	NodesGetter
	Leases(namespace string) kubeapi.Client[*coordinationv1.Lease, *coordinationv1.LeaseList]
}

// Lease is the node's heartbeat: the kubelet's Lease named after the node
// in kube-node-lease, held by the node, renewed every quarter of its
// duration, owned by the Node once it exists so that it goes with it. It
// does what component-helpers' lease controller does for the kubelet,
// over kubeapi instead of client-go's typed clientset (#34), on the
// injected clock.
type Lease struct {
	leases            kubeapi.Client[*coordinationv1.Lease, *coordinationv1.LeaseList]
	nodes             kubeapi.StatusClient[*v1.Node, *v1.NodeList]
	nodeName          string
	durationSeconds   int32
	renew             time.Duration
	clk               clock.Clock
	onRepeatedFailure func()
	latest            *coordinationv1.Lease // the last one written or read
}

// NewLease returns the node's lease; call its Run. durationSeconds 0
// means 40 (renewed every 10 s); clk nil means the real clock;
// onRepeatedFailure (may be nil) is called when an update fails again, as
// the kubelet closes its API connections then.
func NewLease(client LeaseClient, nodeName string, durationSeconds int32, clk clock.Clock, onRepeatedFailure func()) *Lease {
	if durationSeconds <= 0 {
		durationSeconds = DefaultLeaseDurationSeconds
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Lease{leases: client.Leases(LeaseNamespace), nodes: client.Nodes(), nodeName: nodeName,
		durationSeconds: durationSeconds, clk: clk, onRepeatedFailure: onRepeatedFailure,
		renew: time.Duration(leaseRenewFraction * float64(time.Duration(durationSeconds)*time.Second))}
}

// Run renews the lease until ctx ends: at once, then each renewal period
// (jittered) after the last renewal ended.
func (l *Lease) Run(ctx context.Context) {
	for {
		l.sync(ctx)
		t := l.clk.NewTimer(wait.Jitter(l.renew, leaseRenewJitter))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// sync renews from the lease last seen; failing that, it reads (or
// creates) the lease and renews that.
func (l *Lease) sync(ctx context.Context) {
	log := logr.FromContextOrDiscard(ctx)
	if l.latest != nil {
		err := l.update(ctx, l.latest)
		if err == nil {
			return
		}
		log.Info("failed to update lease using latest lease, fallback to ensure lease", "err", err)
	}
	lease, created := l.ensureWithBackoff(ctx)
	l.latest = lease
	if lease != nil && !created {
		if err := l.update(ctx, lease); err != nil {
			log.Error(err, "Will retry updating lease", "interval", l.renew)
		}
	}
}

// ensureWithBackoff reads the lease, creating it if there is none, until
// that works or ctx ends (nil then); created says it was just created.
func (l *Lease) ensureWithBackoff(ctx context.Context) (lease *coordinationv1.Lease, created bool) {
	backoff := leaseFirstBackoff / 2
	for {
		lease, created, err := l.ensure(ctx)
		if err == nil {
			return lease, created
		}
		backoff = min(2*backoff, leaseMaxBackoff)
		logr.FromContextOrDiscard(ctx).Error(err, "Failed to ensure lease exists, will retry", "interval", backoff)
		t := l.clk.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, false
		case <-t.C():
		}
	}
}

func (l *Lease) ensure(ctx context.Context) (*coordinationv1.Lease, bool, error) {
	lease, err := l.leases.Get(ctx, l.nodeName, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		return lease, false, err
	}
	fresh, err := l.next(ctx, nil)
	if err != nil {
		return nil, false, nil // created at the next renewal, owned by the Node then
	}
	if lease, err = l.leases.Create(ctx, fresh, metav1.CreateOptions{}); err != nil {
		return nil, false, err
	}
	return lease, true, nil
}

// update writes base renewed, up to five times; a conflict reads the lease
// again first.
func (l *Lease) update(ctx context.Context, base *coordinationv1.Lease) error {
	log := logr.FromContextOrDiscard(ctx)
	for i := range leaseMaxUpdateRetries {
		renewed, err := l.next(ctx, base)
		if err != nil {
			log.Error(err, "Failed to prepare lease")
		} else {
			written, err := l.leases.Update(ctx, renewed, metav1.UpdateOptions{})
			if err == nil {
				l.latest = written
				return nil
			}
			log.Error(err, "Failed to update lease")
			if apierrors.IsConflict(err) {
				base, _ = l.ensureWithBackoff(ctx)
				continue
			}
		}
		if i > 0 && l.onRepeatedFailure != nil {
			l.onRepeatedFailure()
		}
	}
	return fmt.Errorf("failed %d attempts to update lease", leaseMaxUpdateRetries)
}

// next is base (or a new lease) renewed now, with the configured duration
// and the Node as its owner once the Node exists (the kubelet's
// setNodeOwnerFunc); an error to read the Node is returned with it.
func (l *Lease) next(ctx context.Context, base *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: l.nodeName, Namespace: LeaseNamespace},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(l.nodeName)}}
	if base != nil {
		lease = base.DeepCopy()
	}
	lease.Spec.LeaseDurationSeconds = ptr.To(l.durationSeconds)
	lease.Spec.RenewTime = &metav1.MicroTime{Time: l.clk.Now()}
	if len(lease.OwnerReferences) > 0 {
		return lease, nil
	}
	node, err := l.nodes.Get(ctx, l.nodeName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return lease, nil // not registered yet: owned at a later renewal
	case err != nil:
		return lease, err
	}
	lease.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: l.nodeName, UID: node.UID}}
	return lease, nil
}
