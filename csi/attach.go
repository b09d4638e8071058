package csi

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// AttachmentName is the VolumeAttachment of a CSI volume on a node (the
// attach-detach controller's name for it): csi-<sha256(handle, driver,
// node)>.
func AttachmentName(handle, driver, node string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(handle+driver+node)))
}

// NotAttachedError is a volume whose driver needs attaching and whose
// VolumeAttachment does not say attached yet.
type NotAttachedError struct {
	Handle, Attachment string
}

func (e *NotAttachedError) Error() string {
	return fmt.Sprintf("volume %s is not attached for volume attachment %s", e.Handle, e.Attachment)
}

// Pending is true: the attach-detach controller and the driver's external
// attacher attach it by themselves, so the caller tries again soon rather
// than backing off (podsync waits for such volumes within the sync, as
// the kubelet's WaitForAttachAndMount).
func (*NotAttachedError) Pending() bool { return true }

// attached is the kubelet's WaitForAttach, once (the caller tries again):
// a volume whose driver needs attaching (driver is its CSIDriver, nil if
// it has none) waits until its VolumeAttachment says attached, and its
// attachment metadata is the publish context.
func (v *Volumes) attached(ctx context.Context, driver *storagev1.CSIDriver, name, handle string) (map[string]string, error) {
	if v.Objects == nil || driver != nil && driver.Spec.AttachRequired != nil && !*driver.Spec.AttachRequired {
		return nil, nil
	}
	attachment := AttachmentName(handle, name, v.NodeName)
	va, err := v.Objects.GetVolumeAttachment(ctx, attachment)
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
		// The Node authorizer lets a node read only the attachments of
		// its own: one not made yet is forbidden, not missing.
		return nil, &NotAttachedError{Handle: handle, Attachment: attachment}
	case err != nil:
		return nil, fmt.Errorf("volume attachment %s: %w", attachment, err)
	case va.DeletionTimestamp != nil:
		return nil, errors.New("volume attachment is being deleted")
	case va.Status.Attached:
		return va.Status.AttachmentMetadata, nil
	case va.Status.AttachError != nil:
		return nil, errors.New(va.Status.AttachError.Message)
	}
	return nil, &NotAttachedError{Handle: handle, Attachment: attachment}
}

// InUse are the node's status.volumesInUse of CSI: each volume a pod's
// record names (kubernetes.io/csi/<driver>^<handle>), sorted, so that
// the attach-detach controller does not detach it under the pod.
func (v *Volumes) InUse() []v1.UniqueVolumeName {
	if v.Published == nil {
		return nil
	}
	files, err := v.Published()
	if err != nil {
		return nil
	}
	seen := map[v1.UniqueVolumeName]bool{}
	for _, f := range files {
		if d, err := readVolData(f); err == nil && !d.Ephemeral {
			seen[v1.UniqueVolumeName("kubernetes.io/csi/"+d.Driver+"^"+d.Handle)] = true
		}
	}
	out := make([]v1.UniqueVolumeName, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
