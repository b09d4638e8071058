package nodestatus

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/nodekit-dev/nodekit/kubeapi"
)

// APINode is the node's Node as the API server has it, kept current by a
// watch of that one object: the kubelet's node informer, which its
// admission reads, so that a label or taint set with kubectl counts at
// once (a pod scheduled by a nodeSelector on a label just added is not
// refused). Its retries follow kubeapi.WatchBackoff.
type APINode struct {
	name      string
	store     cache.Store
	reflector *cache.Reflector
}

// NewAPINode watches the Node named name; nothing runs until Run.
func NewAPINode(client NodesGetter, name string) *APINode {
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return client.Nodes().List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return client.Nodes().Watch(ctx, o)
		},
	}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	// With the client's streaming-list support declared (a fake has none).
	return &APINode{name: name, store: store, reflector: cache.NewReflectorWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, client), &v1.Node{}, store,
		cache.ReflectorOptions{Name: "node " + name, Backoff: kubeapi.WatchBackoff()})}
}

// Run keeps the Node current until ctx ends.
func (a *APINode) Run(ctx context.Context) { a.reflector.RunWithContext(ctx) }

// Get returns the Node as last seen, or nil before the first list or
// while it does not exist. It is shared: do not modify it.
func (a *APINode) Get() *v1.Node {
	if obj, ok, _ := a.store.GetByKey(a.name); ok {
		return obj.(*v1.Node)
	}
	return nil
}
