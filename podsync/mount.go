package podsync

import (
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
)

// EventFailedMount is the kubelet's event reason for a volume that cannot
// be set up.
const EventFailedMount = "FailedMount"

// setUpVolumes is the kubelet's periodic volume sync (an updated ConfigMap
// or Secret reaches a running pod) and its WaitForAttachAndMount: a pod
// none of whose sandboxes is ready yet does not start while a volume
// cannot be set up (a ConfigMap not there yet): a FailedMount event per
// volume, the pod stays ContainerCreating, and the sync is retried after
// the back-off. A running pod keeps what it has.
func (s *Syncer) setUpVolumes(pod *v1.Pod, st *kc.PodStatus) error {
	if s.cfg.Volumes == nil {
		return nil
	}
	err := s.cfg.Volumes.SetUpAll(pod)
	if err == nil {
		return nil
	}
	if st.AnySandboxReady() {
		s.cfg.Log.V(2).Info("volumes not refreshed", "pod", podName(pod), "error", err.Error())
		return nil
	}
	var names []string
	for _, e := range joined(err) {
		name, cause := volumeOf(e)
		names = append(names, name)
		if s.cfg.Recorder != nil {
			s.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, EventFailedMount, "MountVolume.SetUp failed for volume %q : %v", name, cause)
		}
	}
	return fmt.Errorf("pod %s: unmounted volumes=[%s]: %w", podName(pod), strings.Join(names, " "), err)
}

// volumeOf is the volume a SetUpAll error is about (volume.SetUpError
// says), and its cause.
func volumeOf(err error) (string, error) {
	var ve interface {
		VolumeName() string
		Unwrap() error
	}
	if errors.As(err, &ve) {
		return ve.VolumeName(), ve.Unwrap()
	}
	return "", err
}

func joined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
