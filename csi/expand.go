package csi

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
)

// Expand grows pv's volume, published at target, to size bytes on the
// node, as the kubelet's CSI expander: NodeExpandVolume with the PV's
// nodeExpandSecretRef. errors.ErrUnsupported when the driver has no
// EXPAND_VOLUME (its volumes need nothing done on the node).
func (v *Volumes) Expand(ctx context.Context, pv *v1.PersistentVolume, target string, size int64) error {
	src := pv.Spec.CSI
	data, err := readVolData(filepath.Join(filepath.Dir(target), VolDataFile))
	if err != nil {
		return err
	}
	c, caps, err := v.client(ctx, src.Driver)
	if err != nil {
		return err
	}
	if !caps.ExpandVolume {
		return fmt.Errorf("NodeExpand is not supported by the CSI driver %s: %w", src.Driver, errors.ErrUnsupported)
	}
	secrets, err := v.secret(ctx, "NodeExpandSecretRef", src.NodeExpandSecretRef)
	if err != nil {
		return err
	}
	vol := Volume{Handle: src.VolumeHandle, FSType: src.FSType, MountFlags: pv.Spec.MountOptions, AccessMode: accessMode(pv, caps.SingleNodeMultiWriter), Block: isBlock(pv)}
	if _, err := c.NodeExpandVolume(ctx, vol, target, data.StagingPath, size, secrets); err != nil {
		return fmt.Errorf("NodeExpandVolume of volume %s: %w", src.VolumeHandle, err)
	}
	return nil
}
