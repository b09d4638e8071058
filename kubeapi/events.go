package kubeapi

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// EventsGetter gives the events of a namespace; Interface has it.
type EventsGetter interface {
	Events(namespace string) Client[*v1.Event, *v1.EventList]
}

// EventSink writes a recorder's events into their own namespaces: it is
// the events.Sink of an agent's events.Recorder.
type EventSink struct{ Client EventsGetter }

// Create creates event in its namespace.
func (s EventSink) Create(ctx context.Context, event *v1.Event) (*v1.Event, error) {
	return s.Client.Events(event.Namespace).Create(ctx, event, metav1.CreateOptions{})
}

// Patch applies data, a strategic merge patch, to the event named as
// event in its namespace (the recorder's count and timestamp updates).
func (s EventSink) Patch(ctx context.Context, event *v1.Event, data []byte) (*v1.Event, error) {
	return s.Client.Events(event.Namespace).Patch(ctx, event.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
}
