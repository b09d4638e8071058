package nodeagent

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/nodekit-dev/nodekit/kubeapi"
)

// ServiceCache is the kubelet's service lister: every Service, kept by a
// watch, for the containers' service environment variables (a
// kuberuntime.Services). Each agent in cluster mode keeps one unless
// Config.Services gives it one: agents in one process (hollow nodes) can
// share it.
type ServiceCache struct {
	informer cache.SharedIndexInformer
}

// ServicesGetter is the part of the API client a ServiceCache calls:
// kubeapi.Interface has it.
type ServicesGetter interface {
	Services(namespace string) kubeapi.StatusClient[*v1.Service, *v1.ServiceList]
}

// NewServiceCache lists and watches every Service with client once Run
// runs.
func NewServiceCache(client ServicesGetter) *ServiceCache {
	services := client.Services(metav1.NamespaceAll)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return services.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return services.Watch(ctx, o)
		},
	}
	return &ServiceCache{informer: cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, client),
		&v1.Service{}, 0, cache.Indexers{})}
}

// Run keeps the Services until ctx ends.
func (s *ServiceCache) Run(ctx context.Context) { s.informer.RunWithContext(ctx) }

// ListServices fails until the Services were read once, as the kubelet
// refuses to start a container then: its environment would lack them.
func (s *ServiceCache) ListServices() ([]*v1.Service, error) {
	if !s.informer.HasSynced() {
		return nil, errors.New("services have not yet been read at least once, cannot construct envvars")
	}
	objs := s.informer.GetStore().List()
	out := make([]*v1.Service, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*v1.Service))
	}
	return out, nil
}
