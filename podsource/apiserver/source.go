package apiserver

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/nodekit-dev/nodekit/kubeapi"
	"github.com/nodekit-dev/nodekit/podsource"
)

// PodsGetter is the API client the source lists and watches pods with: a
// kubeapi.Interface, or a client-go clientset through
// kubeapi/clientgo.Adapt.
type PodsGetter interface {
	Pods(namespace string) kubeapi.StatusClient[*v1.Pod, *v1.PodList]
}

// Config configures an Source.
type Config struct {
	// Client talks to the API server. Required. With the node's own
	// credentials (system:node:<NodeName>) the Node authorizer allows
	// exactly what this source does: list and watch pods with the
	// spec.nodeName=<NodeName> field selector.
	Client PodsGetter
	// NodeName selects the pods bound to this node. Required; it must be
	// the Node object's name, exactly (no lowercasing).
	NodeName string
	// Name is the source's name in the mux. Default "api".
	Name string
	// Clock drives the reflector's backoff and timers, and stamps
	// kubernetes.io/config.seen. Default: real.
	Clock clock.Clock
	// Backoff spaces the reflector's retries while the API server fails.
	// Default: kubeapi.WatchBackoff (at most 10 s apart; the kubelet's are
	// up to 60 s).
	Backoff *wait.Backoff
	Log     logr.Logger
	Metrics *podsource.Metrics
}

// Source sends the pods bound to a node in the API server, with
// the kubelet's semantics (pkg/kubelet/config/apiserver.go): a client-go
// Reflector lists and then watches pods with the field selector
// spec.nodeName=<node> into an UndeltaStore, and every change sends the
// full set (podsource.SET) to the sink. The Reflector resumes a broken watch from the
// last resource version and lists again when that version is gone (410).
//
// Pods keep their API identity (UID, name, namespace) and get no kubelet
// defaults; the copies sent carry kubernetes.io/config.source=api. Mirror
// pods are passed on like any other pod, as the kubelet does.
type Source struct {
	cfg  Config
	sink podsource.Sink
	log  logr.Logger

	mu        sync.Mutex
	running   bool
	synced    bool
	reflector *cache.Reflector

	// seen is each pod's kubernetes.io/config.seen, kept across the new
	// objects each update decodes; only the reflector's goroutine (push)
	// uses it.
	seen map[types.UID]string
}

// New returns a Source sending to sink.
func New(cfg Config, sink podsource.Sink) (*Source, error) {
	if cfg.Client == nil {
		return nil, errors.New("podsource: Config.Client is required")
	}
	if cfg.NodeName == "" {
		return nil, errors.New("podsource: Config.NodeName is required")
	}
	if sink == nil {
		return nil, errors.New("podsource: a sink is required")
	}
	if cfg.Name == "" {
		cfg.Name = podsource.SourceAPI
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Backoff == nil {
		cfg.Backoff = kubeapi.WatchBackoff()
	}
	return &Source{cfg: cfg, sink: sink, seen: map[types.UID]string{}, log: cfg.Log.WithValues("source", cfg.Name, "node", cfg.NodeName)}, nil
}

// Name is the source's name in the mux.
func (s *Source) Name() string { return s.cfg.Name }

// HasSynced reports whether the first list has been delivered to the sink
// (the mux then counts the source as ready).
func (s *Source) HasSynced() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.synced
}

// LastSyncResourceVersion is the resource version the reflector last saw
// ("" before Run's first list).
func (s *Source) LastSyncResourceVersion() string {
	s.mu.Lock()
	r := s.reflector
	s.mu.Unlock()
	if r == nil {
		return ""
	}
	return r.LastSyncResourceVersion()
}

// Run lists and watches until ctx ends, then returns nil once the
// reflector has stopped. Errors of the API server are retried with backoff
// (logged, counted in podsource_fetch_errors_total). Run may be called only
// once at a time.
func (s *Source) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return errors.New("podsource: Source.Run is already running")
	}
	s.running = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.running = false
		s.mu.Unlock()
	}()

	send := func(objs []interface{}) { s.push(ctx, objs) }
	store := addCopier{cache.NewUndeltaStore(send, cache.MetaNamespaceKeyFunc)}
	log := s.log
	r := cache.NewReflectorWithOptions(s.listWatch(), &v1.Pod{}, store, cache.ReflectorOptions{
		Name:    "podsource/" + s.cfg.Name,
		Logger:  &log,
		Clock:   s.cfg.Clock,
		Backoff: s.cfg.Backoff,
	})
	s.mu.Lock()
	s.reflector = r
	s.mu.Unlock()
	r.RunWithContext(logr.NewContext(ctx, s.log))
	return nil
}

// listWatch is the kubelet's NewListWatchFromClient(pods, all namespaces,
// spec.nodeName=<node>), through the pods client so that it also works
// with fake clientsets (adapted); request errors are counted.
func (s *Source) listWatch() cache.ListerWatcher {
	selector := fields.OneTermEqualSelector("spec.nodeName", s.cfg.NodeName).String()
	pods := s.cfg.Client.Pods(metav1.NamespaceAll)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			l, err := pods.List(ctx, o)
			if err != nil && ctx.Err() == nil {
				s.cfg.Metrics.FetchError(s.cfg.Name)
			}
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			w, err := pods.Watch(ctx, o)
			if err != nil && ctx.Err() == nil {
				s.cfg.Metrics.FetchError(s.cfg.Name)
			}
			return w, err
		},
	}
	// Lets the reflector know when the client (a fake) cannot do streaming lists.
	return cache.ToListWatcherWithWatchListSemantics(lw, s.cfg.Client)
}

// addCopier gives the store its own copy of each object a watch adds,
// which prepare then writes into: client-go's fake clientset sends a watch
// that starts after its List the objects it stores, not copies, so the
// source would race with the fake's readers. With a real client this costs
// one copy per pod per watch. (A store wrapper, not apimachinery's
// watch.Filter, whose goroutine outlives a stopped watch.)
type addCopier struct{ cache.Store }

func (s addCopier) Add(obj interface{}) error {
	if o, ok := obj.(runtime.Object); ok {
		obj = o.DeepCopyObject()
	}
	return s.Store.Add(obj)
}

// push converts the store's full set and sends it as a podsource.SET. It runs on the
// reflector's goroutine, so a slow consumer of the mux slows the watch, as
// in the kubelet.
func (s *Source) push(ctx context.Context, objs []interface{}) {
	pods := make([]*v1.Pod, 0, len(objs))
	now := ""
	for _, o := range objs {
		p, ok := o.(*v1.Pod)
		if !ok {
			continue
		}
		// The field selector does this; a client that ignores it (fakes,
		// proxies) must not give us other nodes' pods.
		if p.Spec.NodeName != s.cfg.NodeName {
			continue
		}
		if !prepared(p) { // the store's own object, once: no copy per push
			seen, ok := s.seen[p.UID]
			if !ok {
				if now == "" {
					now = s.cfg.Clock.Now().UTC().Format(time.RFC3339Nano)
				}
				seen = now
				s.seen[p.UID] = seen
			}
			prepare(p, seen)
		}
		pods = append(pods, p)
	}
	if len(s.seen) > len(pods) { // some are gone
		keep := make(map[types.UID]bool, len(pods))
		for _, p := range pods {
			keep[p.UID] = true
		}
		for uid := range s.seen {
			if !keep[uid] {
				delete(s.seen, uid)
			}
		}
	}

	err := s.sink.Update(ctx, podsource.PodUpdate{Op: podsource.SET, Pods: pods, Source: s.cfg.Name})
	switch {
	case err == nil:
		s.mu.Lock()
		s.synced = true
		s.mu.Unlock()
	case ctx.Err() == nil:
		s.log.Error(err, "Cannot deliver the API server's pods")
	}
}

// prepare makes a pod of the source's store, in place, what the source
// sends: ConvertPod's result, and stamped with kubernetes.io/config.seen
// (the time the source first saw it, which the mux keeps), so that the mux
// needs no copy of its own. Only the store's pods are prepared, each once,
// before the mux has them. Their managedFields are dropped too: nothing on
// a node reads them, and they are a third of a pod's memory.
func prepare(p *v1.Pod, seen string) {
	p.ManagedFields = nil
	if p.Annotations == nil {
		p.Annotations = make(map[string]string, 2)
	}
	p.Annotations[podsource.ConfigSourceAnnotation] = podsource.SourceAPI
	p.Annotations[podsource.ConfigSeenAnnotation] = seen
}

// prepared says whether prepare has seen p.
func prepared(p *v1.Pod) bool {
	return p.Annotations[podsource.ConfigSourceAnnotation] == podsource.SourceAPI && p.Annotations[podsource.ConfigSeenAnnotation] != ""
}

// ConvertPod returns the copy of an API server pod that the source
// sends: the same object (UID, name, namespace, spec, status) with the
// kubernetes.io/config.source annotation set to podsource.SourceAPI ("api", whatever
// the source is called in the mux, as in the kubelet). No kubelet defaults
// are applied and p is not modified.
func ConvertPod(p *v1.Pod) *v1.Pod {
	out := p.DeepCopy()
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[podsource.ConfigSourceAnnotation] = podsource.SourceAPI
	return out
}
