package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit-dev/nodekit/podpath"
)

// volumes provides the volumes a standalone node can: emptyDir (on disk,
// or tmpfs for medium Memory) under <root-dir>/pods/<uid>/volumes, and
// hostPath with the API's type checks. Others are refused by name. Every
// path built from the pod goes through package podpath: a UID, volume name
// or subPath that would lead outside <root-dir>/pods/<uid> (or outside the
// volume, for a subPath) is an error, and symlinks below those are not
// followed out of them.
type volumes struct {
	layout podpath.Layout
}

// emptyDirPlugin is the escaped name of the kubelet's emptyDir plugin, the
// directory its volumes live in.
const emptyDirPlugin = "kubernetes.io~empty-dir"

// mounts sets up the container's volumes (idempotently) and returns its
// CRI mounts; it is the runtime manager's MountProvider.
func (v volumes) mounts(pod *v1.Pod, c *v1.Container) ([]*runtimeapi.Mount, error) {
	byName := make(map[string]*v1.Volume, len(pod.Spec.Volumes))
	for i := range pod.Spec.Volumes {
		byName[pod.Spec.Volumes[i].Name] = &pod.Spec.Volumes[i]
	}
	var out []*runtimeapi.Mount
	for i, vm := range c.VolumeMounts {
		vol, ok := byName[vm.Name]
		if !ok {
			return nil, fmt.Errorf("volumeMounts[%d].name: Not found: %q", i, vm.Name)
		}
		host, err := v.setUp(pod, vol)
		if err != nil {
			return nil, fmt.Errorf("volumes[%s]: %w", vol.Name, err)
		}
		if vm.SubPath != "" {
			if filepath.IsAbs(vm.SubPath) || slices.Contains(strings.Split(vm.SubPath, "/"), "..") {
				return nil, fmt.Errorf("volumeMounts[%d].subPath: Invalid value: %q: must be a relative path without '..'", i, vm.SubPath)
			}
			// Created through os.Root: a symlink a container left in the
			// volume cannot take it outside.
			if host, err = podpath.MkdirAllIn(host, vm.SubPath, 0o755); err != nil {
				return nil, fmt.Errorf("volumeMounts[%d].subPath: %w", i, err)
			}
		}
		out = append(out, &runtimeapi.Mount{ContainerPath: vm.MountPath, HostPath: host, Readonly: vm.ReadOnly})
	}
	return out, nil
}

func (v volumes) setUp(pod *v1.Pod, vol *v1.Volume) (string, error) {
	switch {
	case vol.EmptyDir != nil:
		dir, err := v.layout.PodVolumeDir(pod.UID, emptyDirPlugin, vol.Name)
		if err != nil {
			return "", err
		}
		rel, err := filepath.Rel(v.layout.Root(), dir)
		if err != nil {
			return "", err
		}
		if _, err := podpath.MkdirAllIn(v.layout.Root(), rel, 0o777); err != nil {
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
	case vol.HostPath != nil:
		return vol.HostPath.Path, checkHostPath(vol.HostPath)
	}
	return "", errors.New("only emptyDir and hostPath volumes are supported without an API server")
}

// checkHostPath applies hostPath.type: the *OrCreate types create what is
// missing, the others require it to exist with the right kind.
func checkHostPath(h *v1.HostPathVolumeSource) error {
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

// tearDown unmounts memory-backed emptyDirs and removes the pod directory.
func (v volumes) tearDown(pod *v1.Pod) error {
	podDir, err := v.layout.PodDir(pod.UID)
	if err != nil {
		return err // nothing was ever set up for it
	}
	base := filepath.Join(podDir, "volumes", emptyDirPlugin)
	entries, _ := os.ReadDir(base)
	for _, e := range entries {
		dir := filepath.Join(base, e.Name())
		if e.IsDir() && isMountPoint(dir) {
			if err := unix.Unmount(dir, 0); err != nil {
				return fmt.Errorf("unmounting %s: %w", dir, err)
			}
		}
	}
	return podpath.RemoveAllIn(v.layout.PodsDir(), string(pod.UID))
}

// isMountPoint: dir is on another device than its parent.
func isMountPoint(dir string) bool {
	var st, parent unix.Stat_t
	if unix.Stat(dir, &st) != nil || unix.Stat(filepath.Dir(dir), &parent) != nil {
		return false
	}
	return st.Dev != parent.Dev
}
