package kuberuntime

import (
	v1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
)

// EventRecorder records the kubelet's events on pods; *events.Recorder
// (as client-go's record.EventRecorder) implements it, so runtime needs
// no client-go.
type EventRecorder interface {
	Eventf(object apiruntime.Object, eventtype, reason, messageFmt string, args ...any)
}

// The kubelet's event reasons that the runtime manager records.
const (
	EventPulling         = "Pulling"
	EventPulled          = "Pulled"
	EventFailed          = "Failed"
	EventBackOff         = "BackOff"
	EventNeverPull       = "ErrImageNeverPull"
	EventCreated         = "Created"
	EventStarted         = "Started"
	EventKilling         = "Killing"
	EventFailedPostStart = "FailedPostStartHook"
	EventFailedPreStop   = "FailedPreStopHook"
	EventSandboxChanged  = "SandboxChanged"
	EventFailedSandbox   = "FailedCreatePodSandBox"
	// EventFailedToRetrievePullSecret is on the pod after a sync whose
	// pulls failed while some pull secrets could not be read.
	EventFailedToRetrievePullSecret = "FailedToRetrieveImagePullSecret"
)

// event records on the pod, or on its container (the kubelet's
// spec.containers{name} field path) when c is not nil.
func (m *Manager) event(pod *v1.Pod, c *v1.Container, eventtype, reason, format string, args ...any) {
	if m.cfg.Recorder == nil || pod == nil {
		return
	}
	ref := &v1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
		ResourceVersion: pod.ResourceVersion}
	if c != nil {
		ref.FieldPath = kc.ContainerFieldPath(pod, c.Name)
	}
	m.cfg.Recorder.Eventf(ref, eventtype, reason, format, args...)
}
