package kubeapi

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// Interface is what a node agent asks of the API server. *Clientset
// implements it; so does a client-go clientset wrapped by
// kubeapi/clientgo.Adapt (for client-go's fake clientset in tests). Each
// resource's interface has a subset of client-go's typed client's
// methods, with their signatures, so either satisfies it.
type Interface interface {
	Pods(namespace string) StatusClient[*v1.Pod, *v1.PodList]
	Nodes() StatusClient[*v1.Node, *v1.NodeList]
	Events(namespace string) Client[*v1.Event, *v1.EventList]
	Secrets(namespace string) Client[*v1.Secret, *v1.SecretList]
	ConfigMaps(namespace string) Client[*v1.ConfigMap, *v1.ConfigMapList]
	Services(namespace string) StatusClient[*v1.Service, *v1.ServiceList]
	PersistentVolumeClaims(namespace string) StatusClient[*v1.PersistentVolumeClaim, *v1.PersistentVolumeClaimList]
	PersistentVolumes() StatusClient[*v1.PersistentVolume, *v1.PersistentVolumeList]
	ServiceAccounts(namespace string) ServiceAccountClient
	Leases(namespace string) Client[*coordinationv1.Lease, *coordinationv1.LeaseList]
	CSINodes() Client[*storagev1.CSINode, *storagev1.CSINodeList]
	CSIDrivers() Client[*storagev1.CSIDriver, *storagev1.CSIDriverList]
	VolumeAttachments() StatusClient[*storagev1.VolumeAttachment, *storagev1.VolumeAttachmentList]
	TokenReviews() Creator[*authenticationv1.TokenReview]
	SubjectAccessReviews() Creator[*authorizationv1.SubjectAccessReview]
}

// Object is an API object: *v1.Pod, *v1.Node...
type Object interface {
	runtime.Object
	metav1.Object
}

// Client is one resource of one namespace ("" for a cluster-scoped
// resource, or all namespaces in List and Watch).
type Client[T Object, L runtime.Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions,
		subresources ...string) (T, error)
}

// StatusClient is a Client of a resource with a status subresource.
type StatusClient[T Object, L runtime.Object] interface {
	Client[T, L]
	UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// ServiceAccountClient is a namespace's service accounts and their tokens.
type ServiceAccountClient interface {
	Client[*v1.ServiceAccount, *v1.ServiceAccountList]
	CreateToken(ctx context.Context, name string, tr *authenticationv1.TokenRequest,
		opts metav1.CreateOptions) (*authenticationv1.TokenRequest, error)
}

// Creator is a resource that is only created, such as a review.
type Creator[T runtime.Object] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
}
