package events

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
)

// The correlator gives what client-go's EventCorrelator gives (the
// kubelet's), event for event: the same event to write, the same patch
// bytes, the same skips; both are fed the API's answer after each write.
func TestCorrelatorMatchesClientGo(t *testing.T) {
	pod := v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "ns", Name: "web", UID: "u1"}
	other := v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "ns", Name: "db", UID: "u2"}
	type step struct {
		obj           v1.ObjectReference
		etype, reason string
		message       string
		after         time.Duration
	}
	repeat := func(n int, s step) []step {
		out := make([]step, n)
		for i := range out {
			out[i] = s
		}
		return out
	}
	distinct := func(n int, s step) []step {
		out := repeat(n, s)
		for i := range out {
			out[i].message = fmt.Sprintf("%s %d", s.message, i)
		}
		return out
	}
	backoff := step{obj: pod, etype: v1.EventTypeWarning, reason: "BackOff", message: "Back-off restarting failed container"}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"one event", []step{backoff}},
		{"the same event again is a patch of the first", repeat(5, backoff)},
		{"an empty message", repeat(3, step{obj: pod, etype: v1.EventTypeNormal, reason: "Pulled"})},
		{"ten messages of one reason aggregate", distinct(14, backoff)},
		{"aggregation restarts after ten quiet minutes",
			append(distinct(9, backoff), step{obj: pod, etype: v1.EventTypeWarning, reason: "BackOff", message: "late", after: 11 * time.Minute})},
		{"an object's 26th event in a burst is spam", distinct(30, step{obj: pod, etype: v1.EventTypeNormal, reason: "Killing", message: "x"})},
		{"the bucket refills one event per 5 minutes", append(repeat(27, backoff),
			step{obj: pod, etype: v1.EventTypeWarning, reason: "BackOff", message: "Back-off restarting failed container", after: 5 * time.Minute},
			step{obj: pod, etype: v1.EventTypeWarning, reason: "BackOff", message: "Back-off restarting failed container"})},
		{"types have their own buckets", append(repeat(26, backoff), step{obj: pod, etype: v1.EventTypeNormal, reason: "Pulled", message: "m"})},
		{"objects have their own buckets", append(repeat(26, backoff), step{obj: other, etype: v1.EventTypeWarning, reason: "BackOff", message: "m"})},
		{"field paths are events of their own, one aggregate", []step{
			{obj: withFieldPath(pod, "spec.containers{a}"), etype: v1.EventTypeNormal, reason: "Started", message: "Started container a"},
			{obj: withFieldPath(pod, "spec.containers{b}"), etype: v1.EventTypeNormal, reason: "Started", message: "Started container a"},
			{obj: withFieldPath(pod, "spec.containers{a}"), etype: v1.EventTypeNormal, reason: "Started", message: "Started container a"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
			theirs := record.NewEventCorrelatorWithOptions(record.CorrelatorOptions{Clock: clk})
			ours := newCorrelator(Config{Clock: clk, CacheSize: DefaultCacheSize, SpamBurst: DefaultSpamBurst, SpamQPS: DefaultSpamQPS,
				AggregateMax: DefaultAggregateMax, AggregateInterval: DefaultAggregateInterval})
			rv := 0
			for i, s := range tc.steps {
				clk.Step(s.after + time.Millisecond)
				now := metav1.NewTime(clk.Now())
				ev := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", s.obj.Name, now.UnixNano()), Namespace: "ns"},
					InvolvedObject: s.obj, Type: s.etype, Reason: s.reason, Message: s.message, FirstTimestamp: now, LastTimestamp: now,
					Count: 1, Source: v1.EventSource{Component: "kubelet", Host: "node-1"}, ReportingController: "kubelet", ReportingInstance: "node-1"}
				want, err := theirs.EventCorrelate(ev.DeepCopy())
				require.NoError(t, err)
				got, patch, skip := ours.correlate(ev.DeepCopy())
				require.Equal(t, want.Skip, skip, "step %d: skip", i)
				if skip {
					continue
				}
				require.Equal(t, want.Event, got, "step %d: event", i)
				require.Equal(t, string(want.Patch), string(patch), "step %d: patch", i)
				rv++
				answer := got.DeepCopy()
				answer.ResourceVersion = fmt.Sprint(rv)
				theirs.UpdateState(answer.DeepCopy())
				ours.written(answer)
			}
		})
	}
}

func withFieldPath(ref v1.ObjectReference, path string) v1.ObjectReference {
	ref.FieldPath = path
	return ref
}

// The patch carries exactly the count, the last timestamp and the message.
func TestCountPatch(t *testing.T) {
	ts := metav1.NewTime(time.Date(2026, 11, 28, 12, 0, 1, 0, time.UTC))
	assert.JSONEq(t, `{"count":3,"lastTimestamp":"2026-11-28T12:00:01Z","message":"m"}`,
		string(countPatch(&v1.Event{Count: 3, LastTimestamp: ts, Message: "m"})))
	assert.JSONEq(t, `{"count":2,"lastTimestamp":"2026-11-28T12:00:01Z"}`, string(countPatch(&v1.Event{Count: 2, LastTimestamp: ts})))
}
