package kubeapi

import (
	"context"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// resource is one resource of one namespace over a group's REST client:
// every Client and StatusClient the Clientset returns.
type resource[T Object, L runtime.Object] struct {
	rc        rest.Interface
	params    runtime.ParameterCodec
	resource  string
	namespace string
	newT      func() T
	newL      func() L
}

// newResource is the resource of group rc named resource in namespace,
// whose objects are *E and lists *LE.
func newResource[E, LE any, T interface {
	*E
	Object
}, L interface {
	*LE
	runtime.Object
}](cs *Clientset, rc rest.Interface, name, namespace string) resource[T, L] {
	return resource[T, L]{rc: rc, params: cs.params, resource: name, namespace: namespace,
		newT: func() T { return T(new(E)) }, newL: func() L { return L(new(LE)) }}
}

func (r resource[T, L]) request(verb string) *rest.Request {
	return r.rc.Verb(verb).NamespaceIfScoped(r.namespace, r.namespace != "").Resource(r.resource)
}

// Get returns the object named name.
func (r resource[T, L]) Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error) {
	out := r.newT()
	err := r.request("GET").Name(name).VersionedParams(&opts, r.params).Do(ctx).Into(out)
	return out, err
}

// List returns the objects opts selects.
func (r resource[T, L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	out := r.newL()
	err := r.request("GET").VersionedParams(&opts, r.params).Timeout(timeoutOf(opts)).Do(ctx).Into(out)
	return out, err
}

// Watch watches the objects opts selects.
func (r resource[T, L]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return r.request("GET").VersionedParams(&opts, r.params).Timeout(timeoutOf(opts)).Watch(ctx)
}

// Create creates obj and returns what the API server stored.
func (r resource[T, L]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	out := r.newT()
	err := r.request("POST").VersionedParams(&opts, r.params).Body(obj).Do(ctx).Into(out)
	return out, err
}

// Update replaces obj (its resourceVersion a precondition, if set).
func (r resource[T, L]) Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	out := r.newT()
	err := r.request("PUT").Name(obj.GetName()).VersionedParams(&opts, r.params).Body(obj).Do(ctx).Into(out)
	return out, err
}

// UpdateStatus replaces obj's status.
func (r resource[T, L]) UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	out := r.newT()
	err := r.request("PUT").Name(obj.GetName()).SubResource("status").VersionedParams(&opts, r.params).
		Body(obj).Do(ctx).Into(out)
	return out, err
}

// Delete deletes the object named name.
func (r resource[T, L]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return r.request("DELETE").Name(name).Body(&opts).Do(ctx).Error()
}

// Patch applies data, of type pt, to the object named name (or to its
// subresource, such as "status").
func (r resource[T, L]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions,
	subresources ...string) (T, error) {
	out := r.newT()
	err := r.rc.Patch(pt).NamespaceIfScoped(r.namespace, r.namespace != "").Resource(r.resource).Name(name).
		SubResource(subresources...).VersionedParams(&opts, r.params).Body(data).Do(ctx).Into(out)
	return out, err
}

func timeoutOf(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*opts.TimeoutSeconds) * time.Second
}

// creator posts to a resource that is only created.
type creator[T runtime.Object] struct {
	rc       rest.Interface
	params   runtime.ParameterCodec
	resource string
	newT     func() T
}

func newCreator[E any, T interface {
	*E
	runtime.Object
}](cs *Clientset, rc rest.Interface, name string) creator[T] {
	return creator[T]{rc: rc, params: cs.params, resource: name, newT: func() T { return T(new(E)) }}
}

// Create posts obj and returns the API server's answer.
func (c creator[T]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	out := c.newT()
	err := c.rc.Post().Resource(c.resource).VersionedParams(&opts, c.params).Body(obj).Do(ctx).Into(out)
	return out, err
}

// serviceAccounts are a namespace's service accounts.
type serviceAccounts struct {
	resource[*v1.ServiceAccount, *v1.ServiceAccountList]
}

// CreateToken requests a token for the service account named name.
func (s serviceAccounts) CreateToken(ctx context.Context, name string, tr *authenticationv1.TokenRequest,
	opts metav1.CreateOptions) (*authenticationv1.TokenRequest, error) {
	out := &authenticationv1.TokenRequest{}
	err := s.request("POST").Name(name).SubResource("token").VersionedParams(&opts, s.params).Body(tr).Do(ctx).Into(out)
	return out, err
}
