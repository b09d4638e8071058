// Package events records a node agent's events in the API server, as the
// kubelet's event recorder (client-go's tools/record) does: an Event,
// Eventf or AnnotatedEventf call makes a v1.Event about the object (its
// reference found through a Scheme, or given as a *v1.ObjectReference),
// named <object>.<unix nanoseconds in hex> (one on from the recorder's
// last event where the clock has not moved), with the Config's source as its
// Source and reporting controller and instance, and queues it (1000 at
// most; more are dropped and logged); Run writes the queue to a Sink.
//
// Before a write each event goes through the kubelet's correlator, with
// client-go's defaults:
//   - aggregation: the 10th event of one object, type and reason with a
//     different message within 10 minutes becomes one event whose message
//     is "(combined from similar events): " and the last message;
//   - deduplication: an event seen before (same object, field path, type,
//     reason and message) is a PATCH of the first one's count,
//     lastTimestamp and message (a create again if it is gone);
//   - spam filtering: 25 events per object and type at once, then one per
//     5 minutes (a token bucket per key, in an LRU cache of 4096 keys).
//
// A write that fails for want of the server is retried up to 12 times, 10s
// apart (the first wait randomized); one the server refuses is dropped.
//
// Why not client-go's recorder: it computes its PATCH with apimachinery's
// strategicpatch, which compiles kube-openapi, gnostic and yaml v3 into
// the agent (≈2.6 MB of binary, resident in every agent, standalone ones
// that record nothing included). The patch here is always
// {"count","lastTimestamp","message"}, built directly.
//
//	rec, err := events.New(events.Config{Sink: kubeapi.EventSink{Client: client},
//		Source: v1.EventSource{Component: "kubelet", Host: nodeName}, Scheme: scheme})
//	go rec.Run(ctx)
//	rec.Eventf(pod, v1.EventTypeNormal, "Pulled", "Container image %q already present on machine", image)
package events
