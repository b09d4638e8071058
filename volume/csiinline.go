package volume

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
)

// CSIInlineVolumes publishes pods' inline ephemeral CSI volumes;
// *csi.Volumes implements it.
type CSIInlineVolumes interface {
	// PublishInline publishes vol (of type csi) for pod at target;
	// fsGroup says whether the caller is to apply the pod's fsGroup.
	PublishInline(ctx context.Context, pod *v1.Pod, vol *v1.Volume, target string) (fsGroup bool, err error)
	// Unpublish undoes it, from what it recorded beside target.
	Unpublish(ctx context.Context, target string) error
}

// CSIInline serves pod volumes of type csi (CSI inline ephemeral volumes),
// as the kubelet's CSI plugin does: published by the driver on the
// "mount" directory of the volume's directory, whose ownership is then
// set to the pod's fsGroup when the driver's fsGroupPolicy says so, and
// unpublished by TearDown. The volume lives as long as the pod.
type CSIInline struct {
	CSI CSIInlineVolumes
}

// Name is the kubelet's CSI plugin's.
func (CSIInline) Name() string { return "kubernetes.io~csi" }

// Supports reports a csi volume.
func (CSIInline) Supports(vol *v1.Volume) bool { return vol.CSI != nil }

// SetUp publishes the volume once.
func (c CSIInline) SetUp(pod *v1.Pod, vol *v1.Volume, vd VolumeDir) (string, error) {
	target := filepath.Join(vd.Path(), csiTargetDir)
	if mnt.isMountPoint(target) {
		return target, nil
	}
	if _, err := vd.Create(0o750); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), csiTimeout)
	defer cancel()
	fsGroup, err := c.CSI.PublishInline(ctx, pod, vol, target)
	if err != nil || !fsGroup {
		return target, err
	}
	if err := SetVolumeOwnership(target, podFSGroup(pod), fsGroupChangePolicy(pod), false); err != nil {
		return "", errors.Join(fmt.Errorf("applyFSGroup failed for vol %s: %w", vol.Name, err), c.CSI.Unpublish(ctx, target))
	}
	return target, nil
}

// TearDown unpublishes the volume.
func (c CSIInline) TearDown(dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), csiTimeout)
	defer cancel()
	return c.CSI.Unpublish(ctx, filepath.Join(dir, csiTargetDir))
}
