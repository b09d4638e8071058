package cadvisor

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// FsStats are one filesystem's size and use, as cAdvisor reports the
// host's for the root cgroup.
type FsStats struct {
	Device                           string // its source, e.g. /dev/sda1
	Limit, Usage, Inodes, InodesFree uint64 // bytes; inodes
}

// diskFsTypes are the block-device filesystems cAdvisor's fs plugins
// measure for "/" (with containerd it has no per-container filesystem).
var diskFsTypes = map[string]bool{"ext2": true, "ext3": true, "ext4": true, "xfs": true, "btrfs": true}

// readFilesystems measures the host's block-device filesystems listed in
// mountinfo, each device once (bind mounts left out). It reads the file a
// line at a time: with a mount or two per container the host's mountinfo
// grows to hundreds of kilobytes, which the fileReader's buffer would keep.
func readFilesystems(mountinfo string) []FsStats {
	f, err := os.Open(mountinfo)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []FsStats
	seen := map[string]bool{}
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Bytes()
		pre, post, ok := bytes.Cut(line, []byte(" - "))
		fields, tail := bytes.Fields(pre), bytes.Fields(post)
		if !ok || len(fields) < 5 || len(tail) < 2 || !diskFsTypes[string(tail[0])] {
			continue
		}
		source := string(tail[1])
		if seen[source] {
			continue
		}
		seen[source] = true
		var st syscall.Statfs_t
		if syscall.Statfs(unescapeMountPath(fields[4]), &st) != nil {
			continue
		}
		bsize := uint64(st.Bsize)
		out = append(out, FsStats{Device: source, Limit: st.Blocks * bsize, Usage: (st.Blocks - st.Bfree) * bsize,
			Inodes: st.Files, InodesFree: st.Ffree})
	}
	return out
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(b []byte) string {
	if bytes.IndexByte(b, '\\') < 0 {
		return string(b)
	}
	var out []byte
	for i := 0; i < len(b); i++ {
		if b[i] == '\\' && i+3 < len(b) {
			if n, err := strconv.ParseUint(string(b[i+1:i+4]), 8, 8); err == nil {
				out = append(out, byte(n))
				i += 3
				continue
			}
		}
		out = append(out, b[i])
	}
	return string(out)
}
