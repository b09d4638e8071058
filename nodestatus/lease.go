package nodestatus

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/apimachinery/lease"
	"k8s.io/utils/clock"
)

// The kubelet's node lease.
const (
	LeaseNamespace              = v1.NamespaceNodeLease // kube-node-lease
	DefaultLeaseDurationSeconds = 40                    // --node-lease-duration-seconds
	// The lease is renewed every quarter of its duration (10s).
	leaseRenewFraction = 0.25
)

// NewLease returns the node's heartbeat: the kubelet's Lease named after
// the node in kube-node-lease, renewed every 10s for 40s, owned by the
// Node so it goes with it. It is client-go's component-helpers lease
// controller, set up as the kubelet sets it up; call its Run(ctx).
// durationSeconds 0 means 40; onRepeatedFailure (may be nil) is called
// when renewals keep failing, as the kubelet closes its connections then.
func NewLease(client kubernetes.Interface, nodeName string, durationSeconds int32, clk clock.Clock, onRepeatedFailure func()) lease.Controller {
	if durationSeconds <= 0 {
		durationSeconds = DefaultLeaseDurationSeconds
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	renew := time.Duration(leaseRenewFraction * float64(time.Duration(durationSeconds)*time.Second))
	return lease.NewController(clk, client, nodeName, durationSeconds, onRepeatedFailure, renew,
		nodeName, LeaseNamespace, nodeOwner(client, nodeName))
}

// nodeOwner makes the Node the lease's owner once the Node exists, so
// deleting the Node deletes its lease (the kubelet's setNodeOwnerFunc).
func nodeOwner(client kubernetes.Interface, nodeName string) lease.ProcessLeaseFunc {
	return func(l *coordinationv1.Lease) error {
		if len(l.OwnerReferences) > 0 {
			return nil
		}
		node, err := client.CoreV1().Nodes().Get(context.TODO(), nodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil // not registered yet: next renewal
		}
		if err != nil {
			return err
		}
		l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: nodeName, UID: node.UID}}
		return nil
	}
}
