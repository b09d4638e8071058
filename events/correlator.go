package events

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"
)

// correlator is client-go's EventCorrelator with its default key and
// message functions: aggregation, then deduplication, then the spam
// filter.
type correlator struct {
	clock        clock.PassiveClock
	burst        int
	qps          float32
	aggregateMax int
	interval     time.Duration

	mu         sync.Mutex
	aggregates *lru.Cache // aggregate key -> aggregate
	seen       *lru.Cache // event key -> observation
	spam       *lru.Cache // spam key -> flowcontrol.PassiveRateLimiter
}

// aggregate is the messages of similar events since lastSeen.
type aggregate struct {
	messages map[string]struct{}
	lastSeen time.Time
}

// observation is what the API has of an event written before.
type observation struct {
	count           int32
	firstTimestamp  metav1.Time
	name            string
	resourceVersion string
}

func newCorrelator(cfg Config) *correlator {
	return &correlator{clock: cfg.Clock, burst: cfg.SpamBurst, qps: float32(cfg.SpamQPS), aggregateMax: cfg.AggregateMax,
		interval: cfg.AggregateInterval, aggregates: lru.New(cfg.CacheSize), seen: lru.New(cfg.CacheSize), spam: lru.New(cfg.CacheSize)}
}

// correlate gives the event to write for ev, with the patch that updates
// the one written before (nil: create it), or skip for spam.
func (c *correlator) correlate(ev *v1.Event) (out *v1.Event, patch []byte, skip bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out, key := c.aggregate(ev)
	out, patch = c.observe(out, key)
	return out, patch, c.spammed(out)
}

// written records the event as the API returned it, for the next PATCH.
func (c *correlator) written(ev *v1.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen.Add(eventKey(ev), observation{count: ev.Count, firstTimestamp: ev.FirstTimestamp, name: ev.Name, resourceVersion: ev.ResourceVersion})
}

// aggregate counts ev's message among its similar events; at the
// aggregateMax-th distinct message it gives the combined event instead,
// keyed by the aggregate key so that later ones update it.
func (c *correlator) aggregate(ev *v1.Event) (*v1.Event, string) {
	now := c.clock.Now()
	key := aggregateKey(ev)
	var agg aggregate
	if v, ok := c.aggregates.Get(key); ok {
		agg = v.(aggregate)
	}
	if now.Sub(agg.lastSeen) > c.interval {
		agg = aggregate{messages: map[string]struct{}{}}
	}
	agg.messages[ev.Message] = struct{}{}
	agg.lastSeen = now
	c.aggregates.Add(key, agg)
	if len(agg.messages) < c.aggregateMax {
		return ev, eventKey(ev)
	}
	for m := range agg.messages { // client-go's PopAny: stay at the threshold
		delete(agg.messages, m)
		break
	}
	t := metav1.NewTime(now)
	return &v1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%v.%x", ev.InvolvedObject.Name, t.UnixNano()), Namespace: ev.Namespace},
		Count:          1,
		FirstTimestamp: t, LastTimestamp: t,
		InvolvedObject: ev.InvolvedObject,
		Message:        "(combined from similar events): " + ev.Message,
		Type:           ev.Type, Reason: ev.Reason, Source: ev.Source,
	}, key
}

// observe makes ev the next occurrence of the event under key, if one was
// written: its name, first timestamp and count+1, and the patch of count,
// lastTimestamp and message that the API server applies.
func (c *correlator) observe(ev *v1.Event, key string) (*v1.Event, []byte) {
	out := *ev
	var patch []byte
	v, _ := c.seen.Get(key)
	if last, ok := v.(observation); ok && last.count > 0 {
		out.Name, out.ResourceVersion, out.FirstTimestamp, out.Count = last.name, last.resourceVersion, last.firstTimestamp, last.count+1
		patch = countPatch(&out)
	}
	c.seen.Add(key, observation{count: out.Count, firstTimestamp: out.FirstTimestamp, name: out.Name, resourceVersion: out.ResourceVersion})
	return &out, patch
}

// countPatch is the patch client-go's recorder computes between the event
// with count 0, lastTimestamp at the epoch and no message, and ev.
func countPatch(ev *v1.Event) []byte {
	p := struct {
		Count         int32       `json:"count"`
		LastTimestamp metav1.Time `json:"lastTimestamp"`
		Message       string      `json:"message,omitempty"`
	}{ev.Count, ev.LastTimestamp, ev.Message}
	b, _ := json.Marshal(p) // cannot fail: an int, a time, a string
	return b
}

// spammed takes a token from ev's object's bucket; none left: spam.
func (c *correlator) spammed(ev *v1.Event) bool {
	key := spamKey(ev)
	var limiter flowcontrol.PassiveRateLimiter
	if v, ok := c.spam.Get(key); ok {
		limiter = v.(flowcontrol.PassiveRateLimiter)
	} else {
		limiter = flowcontrol.NewTokenBucketPassiveRateLimiterWithClock(c.qps, c.burst, c.clock)
	}
	c.spam.Add(key, limiter)
	return !limiter.TryAccept()
}

// eventKey is an event's identity for deduplication (client-go's
// getEventKey).
func eventKey(ev *v1.Event) string {
	o := &ev.InvolvedObject
	return strings.Join([]string{ev.Source.Component, ev.Source.Host, o.Kind, o.Namespace, o.Name, o.FieldPath, string(o.UID),
		o.APIVersion, ev.Type, ev.Reason, ev.Message}, "")
}

// aggregateKey is client-go's EventAggregatorByReasonFunc: the event less
// its message and field path.
func aggregateKey(ev *v1.Event) string {
	o := &ev.InvolvedObject
	return strings.Join([]string{ev.Source.Component, ev.Source.Host, o.Kind, o.Namespace, o.Name, string(o.UID), o.APIVersion,
		ev.Type, ev.Reason, ev.ReportingController, ev.ReportingInstance}, "")
}

// spamKey is client-go's getSpamKey: the source, object and type.
func spamKey(ev *v1.Event) string {
	o := &ev.InvolvedObject
	return strings.Join([]string{ev.Source.Component, ev.Source.Host, o.Kind, o.Namespace, o.Name, string(o.UID), o.APIVersion, ev.Type}, "")
}
