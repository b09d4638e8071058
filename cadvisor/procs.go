package cadvisor

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// readProcesses counts the cgroup's own processes (cgroup.procs), their
// open file descriptors and sockets, and with limits the first one's soft
// open-files limit (a container's own process): cAdvisor's process metrics.
func readProcesses(r *fileReader, dir string, limits bool, p *ProcessStats) []int {
	b, err := r.read(dir + "/cgroup.procs")
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range bytes.Fields(b) {
		if pid, err := strconv.Atoi(string(f)); err == nil {
			pids = append(pids, pid)
		}
	}
	p.Processes = uint64(len(pids))
	for _, pid := range pids {
		fds, sockets := countFDs("/proc/" + strconv.Itoa(pid) + "/fd")
		p.FileDescriptors += fds
		p.Sockets += sockets
	}
	if limits && len(pids) > 0 {
		p.OpenFilesSoftLimit, p.HasLimits = openFilesSoftLimit(r, pids[0])
	}
	return pids
}

func countFDs(dir string) (fds, sockets uint64) {
	f, err := os.Open(dir)
	if err != nil {
		return 0, 0 // the process is gone
	}
	names, _ := f.Readdirnames(-1)
	f.Close()
	var buf [64]byte
	for _, n := range names {
		fds++
		// "socket:[1234]": read the link into a stack buffer.
		if k, err := syscall.Readlink(dir+"/"+n, buf[:]); err == nil && strings.HasPrefix(string(buf[:k]), "socket") {
			sockets++
		}
	}
	return fds, sockets
}

// openFilesSoftLimit reads "Max open files  1024  4096  files" from
// /proc/<pid>/limits: -1 for unlimited, as cAdvisor.
func openFilesSoftLimit(r *fileReader, pid int) (int64, bool) {
	b, err := r.read("/proc/" + strconv.Itoa(pid) + "/limits")
	if err != nil {
		return 0, false
	}
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		rest, ok := bytes.CutPrefix(line, []byte("Max open files"))
		if !ok {
			continue
		}
		fields := bytes.Fields(rest)
		if len(fields) == 0 {
			return 0, false
		}
		if string(fields[0]) == "unlimited" {
			return -1, true
		}
		v, err := strconv.ParseInt(string(fields[0]), 10, 64)
		return v, err == nil
	}
	return 0, false
}

// readNetDev reads /proc/<pid>/net/dev, the interfaces of the process's
// network namespace, leaving out those cAdvisor ignores (lo, veth*,
// docker*, nerdctl*).
func readNetDev(r *fileReader, pid int, out []InterfaceStats) []InterfaceStats {
	b, err := r.read("/proc/" + strconv.Itoa(pid) + "/net/dev")
	if err != nil {
		return out
	}
	for i, line := range bytes.Split(b, []byte{'\n'}) {
		name, counters, ok := bytes.Cut(line, []byte{':'})
		if i < 2 || !ok {
			continue // the two header lines
		}
		name = bytes.TrimSpace(name)
		if ignoredInterface(name) {
			continue
		}
		f := bytes.Fields(counters)
		if len(f) < 16 {
			continue
		}
		out = append(out, InterfaceStats{Name: string(name),
			RxBytes: parseUint(f[0]), RxPackets: parseUint(f[1]), RxErrors: parseUint(f[2]), RxDropped: parseUint(f[3]),
			TxBytes: parseUint(f[8]), TxPackets: parseUint(f[9]), TxErrors: parseUint(f[10]), TxDropped: parseUint(f[11])})
	}
	return out
}

func ignoredInterface(name []byte) bool {
	for _, p := range []string{"lo", "veth", "docker", "nerdctl"} {
		if bytes.HasPrefix(name, []byte(p)) {
			return true
		}
	}
	return false
}
