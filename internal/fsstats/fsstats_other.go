//go:build !linux

package fsstats

import (
	"errors"
	"io/fs"
)

// Statfs fails: it is implemented on Linux only.
func Statfs(path string) (Fs, error) {
	return Fs{}, &fs.PathError{Op: "statfs", Path: path, Err: errors.ErrUnsupported}
}

func stat(fs.FileInfo) (sysStat, bool) { return sysStat{}, false }
