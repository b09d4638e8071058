// Package fsstats reads filesystems as the kubelet does: the statfs(2)
// figures of the filesystem holding a path (its volume/util/fs.Info, the
// figures cAdvisor gives it for --root-dir and the runtime's mountpoints),
// and the du-style usage of a tree (its fs.DiskUsage, without project
// quotas). It is the one place nodekit's packages call statfs for sizes and
// walk trees to measure them. Linux only: elsewhere every function fails
// with errors.ErrUnsupported.
package fsstats

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Fs is a filesystem's size, in bytes of its blocks (f_bsize).
type Fs struct {
	Capacity   uint64 // f_blocks
	Available  uint64 // f_bavail: what an unprivileged user may still take
	Used       uint64 // f_blocks - f_bfree
	Inodes     uint64 // f_files
	InodesFree uint64 // f_ffree
}

// InodesUsed is Inodes - InodesFree.
func (f Fs) InodesUsed() uint64 { return f.Inodes - min(f.InodesFree, f.Inodes) }

// UsageInfo is what a tree takes on its filesystem (the kubelet's
// fs.UsageInfo).
type UsageInfo struct {
	// Bytes are the blocks allocated (st_blocks × 512), as du and the
	// kubelet count them, not the files' lengths: a 1-byte file takes a
	// whole block (4 KiB on ext4 and tmpfs), a sparse file only what was
	// written, a directory its own blocks (none on tmpfs).
	Bytes uint64
	// Inodes are the entries: files, directories, symlinks, each once.
	Inodes uint64
}

// DiskUsage measures the tree at path as the kubelet's fs.DiskUsage: every
// entry once (path itself included), hard links once, symlinks as
// themselves and never followed, nothing on another filesystem (a mount
// below path is not entered). Entries removed while it walks are not
// counted; a missing path is an error wrapping fs.ErrNotExist.
func DiskUsage(path string) (UsageInfo, error) {
	top, err := os.Lstat(path)
	if err != nil {
		return UsageInfo{}, err
	}
	c, err := newCounter(top)
	if err != nil {
		return UsageInfo{}, err
	}
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			var fi fs.FileInfo
			if fi, err = d.Info(); err == nil {
				if !c.add(fi) && d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed while walked
		}
		return err
	})
	return c.usage, err
}

// FilesUsage measures the files directly in dir, not dir itself nor its
// subdirectories: the kubelet's container and pod log usage (each file of
// the log directory measured by fs.DiskUsage). Symlinks are not followed,
// hard links counted once. A missing dir is an error wrapping
// fs.ErrNotExist.
func FilesUsage(dir string) (UsageInfo, error) {
	top, err := os.Lstat(dir)
	if err != nil {
		return UsageInfo{}, err
	}
	if !top.IsDir() {
		return UsageInfo{}, &fs.PathError{Op: "measure", Path: dir, Err: errors.New("not a directory")}
	}
	c, err := newCounter(top)
	if err != nil {
		return UsageInfo{}, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return UsageInfo{}, err
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // rotated away
		}
		if err != nil {
			return c.usage, err
		}
		c.add(fi)
	}
	return c.usage, nil
}

// counter adds up entries on the top entry's device.
type counter struct {
	dev   uint64
	seen  map[uint64]bool // inodes of files with more than one link
	usage UsageInfo
}

func newCounter(top fs.FileInfo) (*counter, error) {
	st, ok := stat(top)
	if !ok {
		return nil, &fs.PathError{Op: "measure", Path: top.Name(), Err: errors.ErrUnsupported}
	}
	return &counter{dev: st.dev, seen: map[uint64]bool{}}, nil
}

// add counts fi unless it is on another device (false) or a hard link
// already counted.
func (c *counter) add(fi fs.FileInfo) bool {
	st, ok := stat(fi)
	if !ok || st.dev != c.dev {
		return false
	}
	if st.nlink > 1 && !fi.IsDir() {
		if c.seen[st.ino] {
			return true
		}
		c.seen[st.ino] = true
	}
	c.usage.Bytes += st.blocks * 512
	c.usage.Inodes++
	return true
}

// sysStat is what counter needs of a stat(2) result.
type sysStat struct {
	dev, ino, nlink, blocks uint64
}
