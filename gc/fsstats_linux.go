package gc

import (
	"fmt"
	"syscall"
)

func statfs(path string) (capacity, available uint64, err error) {
	if path == "" {
		return 0, 0, fmt.Errorf("statfs: no path (the runtime reports no image filesystem mountpoint)")
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, 0, fmt.Errorf("statfs %s: %w", path, err)
	}
	bsize := uint64(st.Bsize)
	return st.Blocks * bsize, st.Bavail * bsize, nil
}
