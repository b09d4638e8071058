package volume

import (
	"os"
	"path/filepath"
	"syscall"

	v1 "k8s.io/api/core/v1"
)

// The kubelet's masks for a volume owned by an fsGroup.
const (
	rwMask   os.FileMode = 0o660
	roMask   os.FileMode = 0o440
	execMask os.FileMode = 0o110
)

// SetVolumeOwnership gives dir and everything below it to fsGroup as the
// kubelet's SetVolumeOwnership does: each file and directory is chowned to
// the group (its owner kept) and gains group read and write (read only
// for a readOnly volume: configMap, secret, downwardAPI, projected);
// directories also gain group search and setgid, so that files created
// later inherit the group. Symlinks are skipped: their targets are the
// plugin's. With policy OnRootMismatch nothing is done when dir already
// has the group and those bits; the walk does dir last, so an interrupted
// one is redone. A nil fsGroup does nothing. Plugins call it from SetUp;
// the built-in ones pass a nil policy, as the kubelet's do.
//
// The walk goes through os.Root: a symlink a container swaps in cannot
// lead it outside dir. A file that cannot be chowned or chmodded is
// passed over, as by the kubelet (which logs it).
func SetVolumeOwnership(dir string, fsGroup *int64, policy *v1.PodFSGroupChangePolicy, readOnly bool) error {
	if fsGroup == nil {
		return nil
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	mask := rwMask
	if readOnly {
		mask = roMask
	}
	if policy != nil && *policy == v1.FSGroupChangeOnRootMismatch && rootMatches(root, *fsGroup, mask) {
		return nil
	}
	return own(root, ".", int(*fsGroup), mask)
}

// own gives name, children first, to gid.
func own(root *os.Root, name string, gid int, mask os.FileMode) error {
	info, err := root.Lstat(name)
	if err != nil || info.Mode()&os.ModeSymlink != 0 {
		return err
	}
	if info.IsDir() {
		f, err := root.Open(name)
		if err != nil {
			return err
		}
		names, err := f.Readdirnames(-1)
		f.Close()
		if err != nil {
			return err
		}
		for _, n := range names {
			if err := own(root, filepath.Join(name, n), gid, mask); err != nil {
				return err
			}
		}
		mask |= os.ModeSetgid | execMask
	}
	_ = root.Lchown(name, -1, gid)
	_ = root.Chmod(name, info.Mode()|mask)
	return nil
}

// rootMatches is the kubelet's !requiresPermissionChange: the root is a
// directory of the group with setgid and at least the mask's bits.
func rootMatches(root *os.Root, gid int64, mask os.FileMode) bool {
	info, err := root.Stat(".")
	if err != nil || !info.IsDir() {
		return false
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	want := mask | execMask
	return ok && int64(st.Gid) == gid && info.Mode().Perm()&want == want && info.Mode()&os.ModeSetgid != 0
}

// podFSGroup is the pod's fsGroup, or nil.
func fsGroupChangePolicy(pod *v1.Pod) *v1.PodFSGroupChangePolicy {
	if pod.Spec.SecurityContext == nil {
		return nil
	}
	return pod.Spec.SecurityContext.FSGroupChangePolicy
}

func podFSGroup(pod *v1.Pod) *int64 {
	if pod.Spec.SecurityContext == nil {
		return nil
	}
	return pod.Spec.SecurityContext.FSGroup
}
