package events

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/reference"
	"k8s.io/utils/clock"
)

// Sink writes events to the API server; kubeapi.EventSink is one.
type Sink interface {
	// Create creates event in its namespace.
	Create(ctx context.Context, event *v1.Event) (*v1.Event, error)
	// Patch applies data, a strategic merge patch, to the event named as
	// event in its namespace.
	Patch(ctx context.Context, event *v1.Event, data []byte) (*v1.Event, error)
}

// The kubelet's (client-go's) defaults.
const (
	DefaultQueueLength       = 1000
	DefaultCacheSize         = 4096
	DefaultSpamBurst         = 25
	DefaultSpamQPS           = 1. / 300.
	DefaultAggregateMax      = 10
	DefaultAggregateInterval = 10 * time.Minute
	DefaultRetryInterval     = 10 * time.Second
	DefaultMaxTries          = 12
)

// Config says where events go and how they are correlated; zero fields
// take the kubelet's defaults.
type Config struct {
	Sink   Sink           // required
	Source v1.EventSource // the recorder: {Component: "kubelet", Host: node}
	// Scheme gives the kind of the objects events are about (default: the
	// core/v1 kinds; one that is a *v1.ObjectReference needs none).
	Scheme *runtime.Scheme
	// CacheSize bounds each of the correlator's three LRU caches (4096);
	// many agents in one process may use smaller ones.
	CacheSize int
	// SpamBurst and SpamQPS are each object's token bucket (25, 1/300).
	SpamBurst int
	SpamQPS   float64
	// AggregateMax similar events within AggregateInterval become one
	// (10, 10 minutes).
	AggregateMax      int
	AggregateInterval time.Duration
	QueueLength       int           // events waiting for Run (1000)
	RetryInterval     time.Duration // between tries of one write (10s)
	MaxTries          int           // of one write (12)
	Clock             clock.Clock
	Log               logr.Logger
}

// Recorder makes events and writes them; its methods are safe for
// concurrent use, and satisfy the EventRecorder interfaces of nodekit's
// packages.
type Recorder struct {
	cfg   Config
	queue chan *v1.Event
	corr  *correlator
	last  atomic.Int64 // the last name suffix given
}

// New returns a Recorder for cfg with its defaults filled in.
func New(cfg Config) (*Recorder, error) {
	if cfg.Sink == nil {
		return nil, errors.New("events: Config.Sink is required")
	}
	if cfg.SpamQPS < 0 || cfg.SpamBurst < 0 || cfg.CacheSize < 0 || cfg.AggregateMax < 0 || cfg.QueueLength < 0 || cfg.MaxTries < 0 {
		return nil, fmt.Errorf("events: Config has a negative size: CacheSize %d, SpamBurst %d, SpamQPS %v, AggregateMax %d, QueueLength %d, MaxTries %d",
			cfg.CacheSize, cfg.SpamBurst, cfg.SpamQPS, cfg.AggregateMax, cfg.QueueLength, cfg.MaxTries)
	}
	cfg.CacheSize = cmp.Or(cfg.CacheSize, DefaultCacheSize)
	cfg.SpamBurst = cmp.Or(cfg.SpamBurst, DefaultSpamBurst)
	cfg.SpamQPS = cmp.Or(cfg.SpamQPS, DefaultSpamQPS)
	cfg.AggregateMax = cmp.Or(cfg.AggregateMax, DefaultAggregateMax)
	cfg.AggregateInterval = cmp.Or(cfg.AggregateInterval, DefaultAggregateInterval)
	cfg.QueueLength = cmp.Or(cfg.QueueLength, DefaultQueueLength)
	cfg.RetryInterval = cmp.Or(cfg.RetryInterval, DefaultRetryInterval)
	cfg.MaxTries = cmp.Or(cfg.MaxTries, DefaultMaxTries)
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Scheme == nil {
		cfg.Scheme = runtime.NewScheme()
		if err := v1.AddToScheme(cfg.Scheme); err != nil {
			return nil, fmt.Errorf("events: the core/v1 scheme: %w", err)
		}
	}
	return &Recorder{cfg: cfg, queue: make(chan *v1.Event, cfg.QueueLength), corr: newCorrelator(cfg)}, nil
}

// Event records an event about object.
func (r *Recorder) Event(object runtime.Object, eventtype, reason, message string) {
	r.record(object, nil, eventtype, reason, message)
}

// Eventf is Event with a formatted message.
func (r *Recorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.record(object, nil, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

// AnnotatedEventf is Eventf for an event with annotations.
func (r *Recorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	r.record(object, annotations, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

func (r *Recorder) record(object runtime.Object, annotations map[string]string, eventtype, reason, message string) {
	ref, err := reference.GetReference(r.cfg.Scheme, object)
	if err != nil {
		r.cfg.Log.Error(err, "Could not construct reference, will not report event", "eventType", eventtype, "reason", reason, "message", message)
		return
	}
	if eventtype != v1.EventTypeNormal && eventtype != v1.EventTypeWarning {
		r.cfg.Log.Error(nil, "Unsupported event type", "eventType", eventtype, "reason", reason)
		return
	}
	now := metav1.NewTime(r.cfg.Clock.Now())
	ev := &v1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: eventName(ref.Name, r.suffix(now)), Namespace: cmp.Or(ref.Namespace, metav1.NamespaceDefault),
			Annotations: annotations},
		InvolvedObject: *ref, Reason: reason, Message: message, Type: eventtype,
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		Source: r.cfg.Source, ReportingController: r.cfg.Source.Component, ReportingInstance: r.cfg.Source.Host,
	}
	select {
	case r.queue <- ev:
	default:
		r.cfg.Log.Error(nil, "Unable to record event: too many queued events, dropped event", "object", ref.Name, "reason", reason)
	}
}

// suffix is t in Unix nanoseconds, or one more than the last suffix if
// that is not past it: two events of one recorder never share a name, on
// a coarse or fake clock either (client-go's may, and the second is then
// refused as AlreadyExists).
func (r *Recorder) suffix(t metav1.Time) int64 {
	for {
		last, n := r.last.Load(), t.UnixNano()
		n = max(n, last+1)
		if r.last.CompareAndSwap(last, n) {
			return n
		}
	}
}

// eventName is <name>.<suffix in hex>, or a UUID where that is not a
// valid name.
func eventName(object string, suffix int64) string {
	name := fmt.Sprintf("%s.%x", object, suffix)
	if len(validation.NameIsDNSSubdomain(name, false)) > 0 {
		return uuid.NewString()
	}
	return name
}

// Run writes the queued events, one at a time, until ctx ends; the events
// still queued then are dropped.
func (r *Recorder) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-r.queue:
			r.write(ctx, ev)
		}
	}
}

// write correlates ev and writes the result, retrying as the kubelet.
func (r *Recorder) write(ctx context.Context, ev *v1.Event) {
	out, patch, skip := r.corr.correlate(ev)
	if skip {
		return
	}
	for tries := 1; ; tries++ {
		if r.send(ctx, out, patch) {
			return
		}
		if tries >= r.cfg.MaxTries {
			r.cfg.Log.Error(nil, "Unable to write event (retry limit exceeded!)", "event", klogRef(out))
			return
		}
		delay := r.cfg.RetryInterval
		if tries == 1 {
			delay = time.Duration(float64(delay) * rand.Float64())
		}
		select {
		case <-ctx.Done():
			return
		case <-r.cfg.Clock.After(delay):
		}
	}
}

// send writes ev once: a PATCH of an event seen before (a create if it is
// gone), else a create. It says whether ev is done with, written or
// refused by the server.
func (r *Recorder) send(ctx context.Context, ev *v1.Event, patch []byte) bool {
	var written *v1.Event
	var err error
	if patch != nil {
		written, err = r.cfg.Sink.Patch(ctx, ev, patch)
	}
	if patch == nil || apierrors.IsNotFound(err) {
		create := *ev
		create.ResourceVersion = ""
		written, err = r.cfg.Sink.Create(ctx, &create)
	}
	if err == nil {
		r.corr.written(written)
		return true
	}
	var status apierrors.APIStatus
	switch {
	case ctx.Err() != nil || apierrors.IsAlreadyExists(err) || apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause):
		r.cfg.Log.V(5).Info("Server rejected event (will not retry!)", "event", klogRef(ev), "err", err)
		return true
	case errors.As(err, &status):
		r.cfg.Log.Error(err, "Server rejected event (will not retry!)", "event", klogRef(ev))
		return true
	}
	r.cfg.Log.Error(err, "Unable to write event (may retry after sleeping)", "event", klogRef(ev))
	return false
}

// klogRef names an event in the log as namespace/name.
func klogRef(ev *v1.Event) string { return ev.Namespace + "/" + ev.Name }
