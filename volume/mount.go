package volume

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// mounter mounts the tmpfs of memory-backed volumes and the bind mounts
// of local persistent volumes; a variable so that unit tests, which need
// not run as root, can record mounts instead.
type mounter interface {
	mountTmpfs(dir, opts string) error
	bindMount(src, dir string, readOnly bool) error
	unmount(dir string) error
	isMountPoint(dir string) bool
	// mountsBelow are the mount points at or below dir.
	mountsBelow(dir string) ([]string, error)
}

var mnt mounter = hostMounts{}

type hostMounts struct{}

func (hostMounts) mountTmpfs(dir, opts string) error {
	return unix.Mount("tmpfs", dir, "tmpfs", 0, opts)
}

// bindMount is the kubelet's "bind" (then "ro" remount) mount of src on
// dir: a read-only bind needs a remount to take.
func (hostMounts) bindMount(src, dir string, readOnly bool) error {
	if err := unix.Mount(src, dir, "", unix.MS_BIND, ""); err != nil {
		return err
	}
	if readOnly {
		if err := unix.Mount("", dir, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			return errors.Join(err, unix.Unmount(dir, 0))
		}
	}
	return nil
}

func (hostMounts) unmount(dir string) error { return unix.Unmount(dir, 0) }

// isMountPoint: dir is on another device than its parent, or the
// mount table lists it (a bind mount of the same file system).
func (h hostMounts) isMountPoint(dir string) bool {
	var st, parent unix.Stat_t
	if unix.Stat(dir, &st) != nil || unix.Stat(filepath.Dir(dir), &parent) != nil {
		return false
	}
	if st.Dev != parent.Dev {
		return true
	}
	points, err := h.mountsBelow(dir)
	return err == nil && slices.Contains(points, filepath.Clean(dir))
}

// mountsBelow reads /proc/self/mountinfo: the mount points at or below dir.
func (hostMounts) mountsBelow(dir string) ([]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	return mountPointsBelow(string(b), dir), nil
}

// mountPointsBelow parses mountinfo text (its fifth field is the mount
// point, with space, tab, newline and backslash escaped as \ooo).
func mountPointsBelow(mountinfo, dir string) []string {
	dir = filepath.Clean(dir)
	var out []string
	for _, line := range strings.Split(mountinfo, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		p := unescapeOctal(f[4])
		if p == dir || strings.HasPrefix(p, dir+"/") {
			out = append(out, p)
		}
	}
	return out
}

func unescapeOctal(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
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
