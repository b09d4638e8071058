package csi

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// InlineHandle is the volume handle of a pod's inline CSI volume (the
// kubelet's makeVolumeHandle): csi-<sha256(pod UID, volume name)>.
func InlineHandle(pod *v1.Pod, volume string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(string(pod.UID)+volume)))
}

// PublishInline publishes a pod's inline ephemeral CSI volume (a pod
// volume of type csi) at target, as the kubelet's CSI mounter: only for a
// driver whose CSIDriver lists the Ephemeral lifecycle mode; no staging
// and no attachment; the volume handle is InlineHandle, the access mode
// single-node writer, the context the volume's attributes (and the
// pod's, with ephemeral "true", when the driver asks for pod info), the
// publish secret read in the pod's namespace. fsGroup is as Publish's.
func (v *Volumes) PublishInline(ctx context.Context, pod *v1.Pod, vol *v1.Volume, target string) (fsGroup bool, err error) {
	src := vol.CSI
	c, caps, driver, err := v.publisher(ctx, src.Driver, storagev1.VolumeLifecycleEphemeral)
	if err != nil {
		return false, err
	}
	volume := Volume{Handle: InlineHandle(pod, vol.Name), ReadOnly: src.ReadOnly != nil && *src.ReadOnly,
		AccessMode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, Context: src.VolumeAttributes}
	if src.FSType != nil {
		volume.FSType = *src.FSType
	}
	group := podFSGroup(pod)
	if caps.VolumeMountGroup && group != nil {
		volume.MountGroup = strconv.FormatInt(*group, 10)
	}
	if driver.Spec.PodInfoOnMount != nil && *driver.Spec.PodInfoOnMount {
		volume.Context = podInfo(volume.Context, pod, true)
	}
	if ref := src.NodePublishSecretRef; ref != nil {
		if volume.PublishSecrets, err = v.secret(ctx, "NodePublishSecretRef", &v1.SecretReference{Namespace: pod.Namespace, Name: ref.Name}); err != nil {
			return false, err
		}
	}
	defer v.lock(src.Driver, volume.Handle)()
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return false, err
	}
	if err := writeVolData(filepath.Dir(target), volData{Driver: src.Driver, Handle: volume.Handle, Ephemeral: true}); err != nil {
		return false, err
	}
	if err := c.NodePublishVolume(ctx, volume, "", target); err != nil {
		return false, err
	}
	rwo := []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	return !caps.VolumeMountGroup && supportsFSGroup(fsGroupPolicy(driver), volume.FSType, rwo, group, volume.ReadOnly), nil
}

// lifecycleMode is the kubelet's supportsVolumeLifecycleMode: a driver
// without a CSIDriver serves persistent volumes only; one with it, the
// modes it lists (none listed: Persistent, the API's default).
func lifecycleMode(d *storagev1.CSIDriver, name string, mode storagev1.VolumeLifecycleMode) error {
	if d == nil {
		if mode == storagev1.VolumeLifecyclePersistent {
			return nil
		}
		return fmt.Errorf("volume mode %q not supported by driver %s (no CSIDriver object)", mode, name)
	}
	modes := d.Spec.VolumeLifecycleModes
	if len(modes) == 0 {
		modes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	}
	if slices.Contains(modes, mode) {
		return nil
	}
	return fmt.Errorf("volume mode %q not supported by driver %s (only supports %q)", mode, name, modes)
}
