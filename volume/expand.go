package volume

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// ClaimStatusPatcher writes a claim's status (a strategic merge patch from
// old to updated, guarded by old's resourceVersion); volume/apiclient's
// Objects implements it. A PersistentVolumeClaim whose Objects does not
// expands nothing.
type ClaimStatusPatcher interface {
	PatchPersistentVolumeClaimStatus(ctx context.Context, old, updated *v1.PersistentVolumeClaim) (*v1.PersistentVolumeClaim, error)
}

// EventRecorder records events (*events.Recorder, client-go's
// record.EventRecorder).
type EventRecorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any)
}

// The kubelet's event reasons for node expansion.
const (
	EventFileSystemResizeSuccessful = "FileSystemResizeSuccessful"
	EventFileSystemResizeFailed     = "FileSystemResizeFailed"
)

// expand is the kubelet's online expansion of a published CSI volume
// (its NodeExpander): when the claim's allocatedResourceStatuses say
// NodeResizePending or NodeResizeInProgress (the external resizer grew
// the volume and the PV), the claim is marked NodeResizeInProgress, the
// driver's NodeExpandVolume grows the volume to the PV's capacity, and
// the claim's status.capacity becomes that capacity, its resize status
// and resize conditions gone, with FileSystemResizeSuccessful events on
// the pod and the claim. A driver without EXPAND_VOLUME fails it (the
// resizer asked for node expansion). A failure is an event and an error;
// the next SetUp tries again. Not done: the expansion of a ReadWriteMany
// claim on each of its nodes once the status says the new size (the
// kubelet keeps each volume's size on the node for that).
func (p *PersistentVolumeClaim) expand(pod *v1.Pod, vol *v1.Volume, target string) error {
	patcher, ok := p.Objects.(ClaimStatusPatcher)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), csiTimeout)
	defer cancel()
	pvc, err := p.Objects.GetPersistentVolumeClaim(ctx, pod.Namespace, ClaimName(pod, vol))
	if err != nil {
		return err
	}
	status := pvc.Status.AllocatedResourceStatuses[v1.ResourceStorage]
	if status != v1.PersistentVolumeClaimNodeResizePending && status != v1.PersistentVolumeClaimNodeResizeInProgress {
		return nil
	}
	pv, err := p.Objects.GetPersistentVolume(ctx, pvc.Spec.VolumeName)
	if err != nil || pv.Spec.CSI == nil {
		return err
	}
	size := pv.Spec.Capacity[v1.ResourceStorage]
	if status != v1.PersistentVolumeClaimNodeResizeInProgress {
		inProgress := pvc.DeepCopy()
		inProgress.Status.AllocatedResourceStatuses[v1.ResourceStorage] = v1.PersistentVolumeClaimNodeResizeInProgress
		if pvc, err = patcher.PatchPersistentVolumeClaimStatus(ctx, pvc, inProgress); err != nil {
			return fmt.Errorf("MountVolume.NodeExpandVolume failed to mark node expansion in progress: %w", err)
		}
	}
	if err := p.CSI.Expand(ctx, pv, target, size.Value()); err != nil {
		p.event(pod, v1.EventTypeWarning, EventFileSystemResizeFailed, "MountVolume.NodeExpandVolume failed for volume %q : %v", pv.Name, err)
		return fmt.Errorf("MountVolume.NodeExpandVolume failed for volume %q : %w", pv.Name, err)
	}
	done := pvc.DeepCopy()
	if done.Status.Capacity == nil {
		done.Status.Capacity = v1.ResourceList{}
	}
	done.Status.Capacity[v1.ResourceStorage] = size
	delete(done.Status.AllocatedResourceStatuses, v1.ResourceStorage)
	if len(done.Status.AllocatedResourceStatuses) == 0 {
		done.Status.AllocatedResourceStatuses = nil
	}
	done.Status.Conditions = withoutResizeConditions(done.Status.Conditions)
	if _, err := patcher.PatchPersistentVolumeClaimStatus(ctx, pvc, done); err != nil {
		return fmt.Errorf("MountVolume.NodeExpandVolume failed to mark node expansion finished: %w", err)
	}
	node := ""
	if p.Node != nil {
		if n, err := p.Node(); err == nil {
			node = n.Name
		}
	}
	for _, obj := range []runtime.Object{pod, pvc} {
		p.event(obj, v1.EventTypeNormal, EventFileSystemResizeSuccessful, "MountVolume.NodeExpandVolume succeeded for volume %q %s", pv.Name, node)
	}
	return nil
}

func (p *PersistentVolumeClaim) event(obj runtime.Object, typ, reason, format string, args ...any) {
	if p.Recorder != nil {
		p.Recorder.Eventf(obj, typ, reason, format, args...)
	}
}

// withoutResizeConditions drops the conditions the resize owns.
func withoutResizeConditions(cs []v1.PersistentVolumeClaimCondition) []v1.PersistentVolumeClaimCondition {
	var out []v1.PersistentVolumeClaimCondition
	for _, c := range cs {
		switch c.Type {
		case v1.PersistentVolumeClaimFileSystemResizePending, v1.PersistentVolumeClaimResizing,
			v1.PersistentVolumeClaimControllerResizeError, v1.PersistentVolumeClaimNodeResizeError:
		default:
			out = append(out, c)
		}
	}
	return out
}

// PendingError is a SetUp error expected to clear by itself in a moment:
// the caller tries again soon instead of backing off (podsync waits for
// such volumes within the sync, as the kubelet's volume manager retries
// them on its next loop).
type PendingError struct{ Err error }

func (e *PendingError) Error() string { return e.Err.Error() }
func (e *PendingError) Unwrap() error { return e.Err }

// Pending is true.
func (*PendingError) Pending() bool { return true }

// transient makes err pending when the API server refused the read: the
// Node authorizer lets a node read a pod's claim and volume only once its
// graph has the pod, a moment after the pod is created ("no relationship
// found between node and this object").
func transient(err error) error {
	if apierrors.IsForbidden(err) {
		return &PendingError{Err: err}
	}
	return err
}
