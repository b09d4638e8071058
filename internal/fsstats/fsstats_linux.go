package fsstats

import (
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// Statfs reads the size of the filesystem holding path; errors are
// *fs.PathError (op "statfs"), fs.ErrNotExist for a missing path.
func Statfs(path string) (Fs, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return Fs{}, &fs.PathError{Op: "statfs", Path: path, Err: err}
	}
	bsize := uint64(st.Bsize)
	return Fs{Capacity: st.Blocks * bsize, Available: st.Bavail * bsize, Used: (st.Blocks - st.Bfree) * bsize,
		Inodes: st.Files, InodesFree: st.Ffree}, nil
}

func stat(fi fs.FileInfo) (sysStat, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return sysStat{}, false
	}
	return sysStat{dev: uint64(st.Dev), ino: st.Ino, nlink: uint64(st.Nlink), blocks: uint64(max(st.Blocks, 0))}, true
}
