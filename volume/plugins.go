package volume

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// EmptyDir serves emptyDir volumes: a directory in the pod's directory,
// or a tmpfs there for medium Memory (sizeLimit its size).
type EmptyDir struct{}

// Name is the kubelet's escaped plugin name.
func (EmptyDir) Name() string { return "kubernetes.io~empty-dir" }

// Supports reports an emptyDir volume.
func (EmptyDir) Supports(vol *v1.Volume) bool { return vol.EmptyDir != nil }

// SetUp creates dir (below the pod directory, through os.Root) and mounts
// a tmpfs on it for medium Memory.
func (EmptyDir) SetUp(_ *v1.Pod, vol *v1.Volume, vd VolumeDir) (string, error) {
	dir, err := vd.Create(0o777)
	if err != nil {
		return "", err
	}
	if vol.EmptyDir.Medium == v1.StorageMediumMemory && !isMountPoint(dir) {
		opts := ""
		if l := vol.EmptyDir.SizeLimit; l != nil && !l.IsZero() {
			opts = fmt.Sprintf("size=%d", l.Value())
		}
		if err := unix.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
			return "", fmt.Errorf("emptyDir.medium Memory: mounting tmpfs on %s: %w", dir, err)
		}
	}
	return dir, nil
}

// TearDown unmounts a memory-backed emptyDir.
func (EmptyDir) TearDown(dir string) error {
	if isMountPoint(dir) {
		if err := unix.Unmount(dir, 0); err != nil {
			return fmt.Errorf("unmounting %s: %w", dir, err)
		}
	}
	return nil
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

// isMountPoint: dir is on another device than its parent.
func isMountPoint(dir string) bool {
	var st, parent unix.Stat_t
	if unix.Stat(dir, &st) != nil || unix.Stat(filepath.Dir(dir), &parent) != nil {
		return false
	}
	return st.Dev != parent.Dev
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
