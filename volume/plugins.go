package volume

import (
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
)

// EmptyDir serves emptyDir volumes: a directory in the pod's directory,
// or a tmpfs there for medium Memory, set up once as the kubelet does:
// made 0777 past the umask (so non-root containers can write), given to
// the pod's fsGroup, then marked ready in <pod>/plugins; later SetUps
// leave the container's files alone.
type EmptyDir struct {
	// NodeAllocatable's memory bounds a medium Memory tmpfs (with the
	// pod's memory limit and sizeLimit: the kubelet's sizing); nil: only
	// the others count.
	NodeAllocatable func() v1.ResourceList
	// PodMemoryLimit is the pod cgroup's memory limit in bytes, 0 for none
	// (the kubelet's ResourceConfigForPod: cgroupmgr.ResourceConfigForPod's
	// Memory); nil: not known.
	PodMemoryLimit func(pod *v1.Pod) int64
}

// Name is the kubelet's escaped plugin name.
func (EmptyDir) Name() string { return "kubernetes.io~empty-dir" }

// Supports reports an emptyDir volume.
func (EmptyDir) Supports(vol *v1.Volume) bool { return vol.EmptyDir != nil }

// SetUp creates dir (below the pod directory, through os.Root), mounts a
// tmpfs on it for medium Memory and applies the pod's fsGroup, unless
// that was done before.
func (e EmptyDir) SetUp(pod *v1.Pod, vol *v1.Volume, vd VolumeDir) (string, error) {
	memory := vol.EmptyDir.Medium == v1.StorageMediumMemory
	if vd.ready() && (!memory || mnt.isMountPoint(vd.Path())) {
		return vd.Path(), nil
	}
	dir, err := setupDir(vd)
	if err != nil {
		return "", err
	}
	if memory {
		if err := mountMemory(dir, memorySize(pod, vol.EmptyDir.SizeLimit, e.NodeAllocatable, e.PodMemoryLimit)); err != nil {
			return "", fmt.Errorf("emptyDir.medium Memory: %w", err)
		}
	}
	if err := SetVolumeOwnership(dir, podFSGroup(pod), nil, false); err != nil {
		return "", fmt.Errorf("fsGroup: %w", err)
	}
	return dir, vd.setReady()
}

// TearDown unmounts a memory-backed emptyDir.
func (EmptyDir) TearDown(dir string) error { return unmountMemory(dir) }

// setupDir is the kubelet's emptyDir setupDir, which configMap, secret,
// downwardAPI and projected volumes wrap too: the directory is created and
// chmodded to 0777 when its permission bits differ (the umask applies to
// mkdir, not to chmod; setgid set by an fsGroup is kept).
func setupDir(vd VolumeDir) (string, error) {
	dir, err := vd.Create(0o777)
	if err != nil {
		return "", err
	}
	info, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	if info.Mode().Perm() != 0o777 {
		if err := os.Chmod(dir, 0o777); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// HostPath serves hostPath volumes with the API's type checks.
type HostPath struct{}

// Name is the kubelet's escaped plugin name.
func (HostPath) Name() string { return "kubernetes.io~host-path" }

// Supports reports a hostPath volume.
func (HostPath) Supports(vol *v1.Volume) bool { return vol.HostPath != nil }

// SetUp checks (and for the *OrCreate types creates) the host path and
// returns it; dir is not used: the volume is the node's own path.
func (HostPath) SetUp(_ *v1.Pod, vol *v1.Volume, _ VolumeDir) (string, error) {
	return vol.HostPath.Path, CheckHostPath(vol.HostPath)
}

// TearDown does nothing: the node's path is the node's.
func (HostPath) TearDown(string) error { return nil }

// CheckHostPath applies hostPath.type: the *OrCreate types create what is
// missing, the others require it to exist with the right kind.
func CheckHostPath(h *v1.HostPathVolumeSource) error {
	t := v1.HostPathUnset
	if h.Type != nil {
		t = *h.Type
	}
	fi, err := os.Stat(h.Path)
	switch t {
	case v1.HostPathUnset:
		return nil
	case v1.HostPathDirectoryOrCreate:
		if os.IsNotExist(err) {
			return os.MkdirAll(h.Path, 0o755)
		}
	case v1.HostPathFileOrCreate:
		if os.IsNotExist(err) {
			if err := os.MkdirAll(filepath.Dir(h.Path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(h.Path, os.O_CREATE|os.O_RDONLY, 0o644)
			if err != nil {
				return err
			}
			return f.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("hostPath.path: Invalid value: %q: %w", h.Path, err)
	}
	ok := true
	switch t {
	case v1.HostPathDirectory, v1.HostPathDirectoryOrCreate:
		ok = fi.IsDir()
	case v1.HostPathFile, v1.HostPathFileOrCreate:
		ok = fi.Mode().IsRegular()
	case v1.HostPathSocket:
		ok = fi.Mode()&os.ModeSocket != 0
	case v1.HostPathCharDev:
		ok = fi.Mode()&os.ModeCharDevice != 0
	case v1.HostPathBlockDev:
		ok = fi.Mode()&os.ModeDevice != 0 && fi.Mode()&os.ModeCharDevice == 0
	}
	if !ok {
		return fmt.Errorf("hostPath.type: Invalid value: %q: %s is not a %s", t, h.Path, t)
	}
	return nil
}

// readDirs lists the subdirectories of dir (none if it is missing or
// unreadable: then there is nothing of ours to unmount in it).
func readDirs(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}
