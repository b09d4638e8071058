// Package clientgo adapts a client-go clientset to kubeapi.Interface: for
// an agent that already has one, and for tests on client-go's fake
// clientset (its reactors and recorded actions work as ever). It links
// client-go's typed clientset, which kubeapi itself does not.
//
//	client := clientgo.Adapt(fake.NewClientset())
package clientgo

import (
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/watchlist"

	"github.com/nodekit-dev/nodekit/kubeapi"
)

// Adapt returns cs as a kubeapi.Interface.
func Adapt(cs kubernetes.Interface) kubeapi.Interface { return adapter{cs} }

type adapter struct{ cs kubernetes.Interface }

// IsWatchListSemanticsUnSupported passes on what the clientset says, for
// client-go's reflectors (cache.ToListWatcherWithWatchListSemantics):
// client-go's fake cannot stream lists.
func (a adapter) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(a.cs)
}

func (a adapter) Pods(ns string) kubeapi.StatusClient[*v1.Pod, *v1.PodList] {
	return a.cs.CoreV1().Pods(ns)
}

func (a adapter) Nodes() kubeapi.StatusClient[*v1.Node, *v1.NodeList] { return a.cs.CoreV1().Nodes() }

func (a adapter) Events(ns string) kubeapi.Client[*v1.Event, *v1.EventList] {
	return a.cs.CoreV1().Events(ns)
}

func (a adapter) Secrets(ns string) kubeapi.Client[*v1.Secret, *v1.SecretList] {
	return a.cs.CoreV1().Secrets(ns)
}

func (a adapter) ConfigMaps(ns string) kubeapi.Client[*v1.ConfigMap, *v1.ConfigMapList] {
	return a.cs.CoreV1().ConfigMaps(ns)
}

func (a adapter) Services(ns string) kubeapi.StatusClient[*v1.Service, *v1.ServiceList] {
	return a.cs.CoreV1().Services(ns)
}

func (a adapter) PersistentVolumeClaims(ns string) kubeapi.StatusClient[*v1.PersistentVolumeClaim, *v1.PersistentVolumeClaimList] {
	return a.cs.CoreV1().PersistentVolumeClaims(ns)
}

func (a adapter) PersistentVolumes() kubeapi.StatusClient[*v1.PersistentVolume, *v1.PersistentVolumeList] {
	return a.cs.CoreV1().PersistentVolumes()
}

func (a adapter) ServiceAccounts(ns string) kubeapi.ServiceAccountClient {
	return a.cs.CoreV1().ServiceAccounts(ns)
}

func (a adapter) Leases(ns string) kubeapi.Client[*coordinationv1.Lease, *coordinationv1.LeaseList] {
	return a.cs.CoordinationV1().Leases(ns)
}

func (a adapter) CSINodes() kubeapi.Client[*storagev1.CSINode, *storagev1.CSINodeList] {
	return a.cs.StorageV1().CSINodes()
}

func (a adapter) CSIDrivers() kubeapi.Client[*storagev1.CSIDriver, *storagev1.CSIDriverList] {
	return a.cs.StorageV1().CSIDrivers()
}

func (a adapter) VolumeAttachments() kubeapi.StatusClient[*storagev1.VolumeAttachment, *storagev1.VolumeAttachmentList] {
	return a.cs.StorageV1().VolumeAttachments()
}

func (a adapter) TokenReviews() kubeapi.Creator[*authenticationv1.TokenReview] {
	return a.cs.AuthenticationV1().TokenReviews()
}

func (a adapter) SubjectAccessReviews() kubeapi.Creator[*authorizationv1.SubjectAccessReview] {
	return a.cs.AuthorizationV1().SubjectAccessReviews()
}
