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
// client-go's record.EventSink (as client-go's typed EventSinkImpl, which
// needs the typed clientset), for an EventBroadcaster's
// StartRecordingToSink.
type EventSink struct{ Client EventsGetter }

// Create creates event in its namespace.
func (s EventSink) Create(event *v1.Event) (*v1.Event, error) {
	return s.Client.Events(event.Namespace).Create(context.TODO(), event, metav1.CreateOptions{})
}

// Update replaces event in its namespace.
func (s EventSink) Update(event *v1.Event) (*v1.Event, error) {
	return s.Client.Events(event.Namespace).Update(context.TODO(), event, metav1.UpdateOptions{})
}

// Patch applies data, a strategic merge patch, to the event named as
// event in its namespace (the recorder's count and timestamp updates).
func (s EventSink) Patch(event *v1.Event, data []byte) (*v1.Event, error) {
	return s.Client.Events(event.Namespace).Patch(context.TODO(), event.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
}
