package volume

import (
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// mounter mounts the tmpfs of memory-backed volumes; a variable so that
// unit tests, which need not run as root, can record mounts instead.
type mounter interface {
	mountTmpfs(dir, opts string) error
	unmount(dir string) error
	isMountPoint(dir string) bool
}

var mnt mounter = hostMounts{}

type hostMounts struct{}

func (hostMounts) mountTmpfs(dir, opts string) error {
	return unix.Mount("tmpfs", dir, "tmpfs", 0, opts)
}

func (hostMounts) unmount(dir string) error { return unix.Unmount(dir, 0) }

// isMountPoint: dir is on another device than its parent.
func (hostMounts) isMountPoint(dir string) bool {
	var st, parent unix.Stat_t
	if unix.Stat(dir, &st) != nil || unix.Stat(filepath.Dir(dir), &parent) != nil {
		return false
	}
	return st.Dev != parent.Dev
}

// mountMemory mounts a tmpfs of size bytes (0: the kernel's default, half
// the RAM) on dir, unless one is there: SetUp is idempotent.
func mountMemory(dir string, size int64) error {
	if mnt.isMountPoint(dir) {
		return nil
	}
	opts := ""
	if size > 0 {
		opts = fmt.Sprintf("size=%d", size)
	}
	if err := mnt.mountTmpfs(dir, opts); err != nil {
		return fmt.Errorf("mounting tmpfs on %s: %w", dir, err)
	}
	return nil
}

// unmountMemory undoes mountMemory, if dir is a mount point.
func unmountMemory(dir string) error {
	if mnt.isMountPoint(dir) {
		if err := mnt.unmount(dir); err != nil {
			return fmt.Errorf("unmounting %s: %w", dir, err)
		}
	}
	return nil
}

// memorySize is the kubelet's calculateEmptyDirMemorySize, the size of a
// memory-backed volume's tmpfs: the node's allocatable memory, lowered to
// the pod's memory limit, then to sizeLimit (an emptyDir's; may be nil),
// each when positive and smaller. 0 when none is known: the kernel's
// default size.
func memorySize(pod *v1.Pod, sizeLimit *resource.Quantity, alloc func() v1.ResourceList, podLimit func(*v1.Pod) int64) int64 {
	var size int64
	if alloc != nil {
		if q, ok := alloc()[v1.ResourceMemory]; ok {
			size = q.Value()
		}
	}
	lower := func(v int64) {
		if v > 0 && (size == 0 || v <= size) {
			size = v
		}
	}
	if podLimit != nil {
		lower(podLimit(pod))
	}
	if sizeLimit != nil {
		lower(sizeLimit.Value())
	}
	return size
}
