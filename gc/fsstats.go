package gc

import (
	"errors"

	"github.com/nodekit-dev/nodekit/internal/fsstats"
)

// FsStats gives the capacity and available bytes of the filesystem
// mounted at (or holding) path. CRI's ImageFsInfo reports only the bytes
// images use and where their filesystem is; the kubelet asks cAdvisor for
// the rest, the image GC asks this.
type FsStats interface {
	FsStats(path string) (capacity, available uint64, err error)
}

// FsStatsFunc adapts a function to FsStats.
type FsStatsFunc func(path string) (capacity, available uint64, err error)

// FsStats implements FsStats.
func (f FsStatsFunc) FsStats(path string) (capacity, available uint64, err error) { return f(path) }

// Statfs is FsStats by statfs(2): capacity is the filesystem's blocks,
// available those an unprivileged user may take (f_bavail), as df and
// cAdvisor count them. It fails on systems other than Linux.
var Statfs FsStats = FsStatsFunc(statfs)

func statfs(path string) (capacity, available uint64, err error) {
	if path == "" {
		return 0, 0, errors.New("statfs: no path (the runtime reports no image filesystem mountpoint)")
	}
	fs, err := fsstats.Statfs(path)
	return fs.Capacity, fs.Available, err
}
