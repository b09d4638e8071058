package volume

import (
	v1 "k8s.io/api/core/v1"
)

// Image serves image volumes (volumes[].image) as the kubelet's image
// plugin does: there is nothing to set up on the node. The runtime mounts
// the image itself (CRI Mount.image, containerd 2.1 and later), once the
// runtime manager has pulled it with its pullPolicy; Mounts returns such a
// mount with no host path, its volume's Name, read-only, and the subPath
// as ImageSubPath, for kuberuntime to fill in the image.
type Image struct{}

// Name is the kubelet's escaped plugin name (no directory is made).
func (Image) Name() string { return "kubernetes.io~image" }

// Supports reports an image volume.
func (Image) Supports(vol *v1.Volume) bool { return vol.Image != nil }

// SetUp does nothing: the runtime mounts the image. The host path is "".
func (Image) SetUp(*v1.Pod, *v1.Volume, VolumeDir) (string, error) { return "", nil }

// TearDown does nothing.
func (Image) TearDown(string) error { return nil }

// ReadOnly: an image volume is always mounted read-only.
func (Image) ReadOnly() bool { return true }
