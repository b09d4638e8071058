package events_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodekit-dev/nodekit/events"
)

// printSink stands in for the API server (kubeapi.EventSink in an agent).
type printSink struct{ done chan struct{} }

func (s printSink) Create(_ context.Context, ev *v1.Event) (*v1.Event, error) {
	fmt.Printf("create %s/%s: %s %s %q (count %d)\n", ev.Namespace, ev.InvolvedObject.Name, ev.Type, ev.Reason, ev.Message, ev.Count)
	s.done <- struct{}{}
	return ev, nil
}

func (s printSink) Patch(_ context.Context, ev *v1.Event, patch []byte) (*v1.Event, error) {
	fmt.Printf("patch %s/%s: count %d\n", ev.Namespace, ev.InvolvedObject.Name, ev.Count)
	s.done <- struct{}{}
	return ev, nil
}

func Example() {
	scheme := runtime.NewScheme()
	scheme.AddKnownTypes(v1.SchemeGroupVersion, &v1.Pod{})
	sink := printSink{done: make(chan struct{})}
	rec, err := events.New(events.Config{Sink: sink, Source: v1.EventSource{Component: "kubelet", Host: "node-1"}, Scheme: scheme})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go rec.Run(ctx)

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "1234"}}
	for range 2 { // the second is the first one's count going up
		rec.Eventf(pod, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", "web", "web")
		<-sink.done
	}
	// Output:
	// create default/web: Warning BackOff "Back-off restarting failed container web in pod web" (count 1)
	// patch default/web: count 2
}
