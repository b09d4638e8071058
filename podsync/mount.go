package podsync

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
)

// EventFailedMount is the kubelet's event reason for a volume that cannot
// be set up.
const EventFailedMount = "FailedMount"

// The kubelet's WaitForAttachAndMount: how long a pod's first sync waits
// for volumes that are pending, and how often it tries them again.
const (
	AttachAndMountTimeout       = 2*time.Minute + 3*time.Second
	AttachAndMountRetryInterval = 300 * time.Millisecond
)

// setUpVolumes is the kubelet's periodic volume sync (an updated ConfigMap
// or Secret reaches a running pod) and its WaitForAttachAndMount: a pod
// none of whose sandboxes is ready yet does not start while a volume
// cannot be set up. A volume whose error is pending (it has a method
// Pending() bool that says true: a CSI volume not attached yet) is tried
// again every AttachAndMountRetryInterval, up to AttachAndMountTimeout or
// until ctx ends, without an event (the pod's status is published
// first), so that the pod starts as soon as
// the attach-detach controller is done rather than after the workers'
// back-off. Any other failure (a ConfigMap not there yet), or a wait that
// timed out, is a FailedMount event per volume: the pod stays
// ContainerCreating, and the sync is retried after the back-off. A
// running pod keeps what it has.
func (s *Syncer) setUpVolumes(ctx context.Context, pod *v1.Pod, st *kc.PodStatus) error {
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
	if allPending(err) {
		// As the kubelet's SyncPod, the status (ContainerCreating) is
		// published before the wait.
		s.publish(pod, st, nil, false)
		if err = s.waitForVolumes(ctx, pod, err); err == nil {
			return nil
		}
	}
	var names []string
	for _, e := range joined(err) {
		name, cause := volumeOf(e)
		names = append(names, name)
		if s.cfg.Recorder != nil && ctx.Err() == nil {
			op := "SetUp"
			if pending(e) {
				op = "WaitForAttach"
			}
			s.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, EventFailedMount, "MountVolume.%s failed for volume %q : %v", op, name, cause)
		}
	}
	return fmt.Errorf("pod %s: unmounted volumes=[%s]: %w", podName(pod), strings.Join(names, " "), err)
}

// waitForVolumes sets pod's volumes up again until none is pending, for
// at most AttachAndMountTimeout; it returns the last error (nil: all set
// up), err until one is tried.
func (s *Syncer) waitForVolumes(ctx context.Context, pod *v1.Pod, err error) error {
	s.cfg.Log.V(3).Info("waiting for volumes to attach and mount", "pod", podName(pod))
	deadline := s.cfg.Clock.Now().Add(AttachAndMountTimeout)
	for {
		select {
		case <-ctx.Done():
			return err
		case <-s.cfg.Clock.After(AttachAndMountRetryInterval):
		}
		if err = s.cfg.Volumes.SetUpAll(pod); err == nil || !allPending(err) || !s.cfg.Clock.Now().Before(deadline) {
			return err
		}
	}
}

// pending says whether err is one that clears by itself (see
// setUpVolumes).
func pending(err error) bool {
	var p interface{ Pending() bool }
	return errors.As(err, &p) && p.Pending()
}

func allPending(err error) bool {
	for _, e := range joined(err) {
		if !pending(e) {
			return false
		}
	}
	return true
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
