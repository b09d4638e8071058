package nodestatus

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"

	"github.com/nodekit-dev/nodekit/internal/fsstats"
)

// MachineInfo is what the node status reports about the machine: the
// kubelet reads it through cAdvisor; here it comes from /proc, /sys and
// /etc directly.
type MachineInfo struct {
	NumCPU         int
	MemoryCapacity int64 // bytes, MemTotal
	// Hugepages maps a page size in bytes to the number of pages reserved.
	Hugepages map[int64]int64
	// RootfsCapacity is the size in bytes of the filesystem of --root-dir
	// (the kubelet's ephemeral-storage capacity).
	RootfsCapacity int64
	MachineID      string
	SystemUUID     string
	BootID         string
	KernelVersion  string
	OSImage        string
}

// MachinePaths locate the files MachineInfo is read from; zero fields are
// the host's. Tests point them at a directory of their own.
type MachinePaths struct {
	Proc, Sys, Etc string // default /proc, /sys, /etc
	RootDir        string // default /var/lib/kubelet
}

func (p MachinePaths) withDefaults() MachinePaths {
	for _, f := range []struct {
		dst *string
		def string
	}{{&p.Proc, "/proc"}, {&p.Sys, "/sys"}, {&p.Etc, "/etc"}, {&p.RootDir, "/var/lib/kubelet"}} {
		if *f.dst == "" {
			*f.dst = f.def
		}
	}
	return p
}

// ReadMachineInfo reads the machine's facts. Missing optional files (DMI
// product_uuid needs root; machine-id may be absent in containers) leave
// their field empty; an unreadable /proc/meminfo or root dir is an error.
func ReadMachineInfo(paths MachinePaths) (MachineInfo, error) {
	p := paths.withDefaults()
	mi := MachineInfo{NumCPU: goruntime.NumCPU(), Hugepages: map[int64]int64{}}
	mem, err := memTotal(filepath.Join(p.Proc, "meminfo"))
	if err != nil {
		return mi, err
	}
	mi.MemoryCapacity = mem
	fs, err := fsstats.Statfs(p.RootDir)
	if err != nil {
		return mi, fmt.Errorf("nodestatus: RootDir: %w", err)
	}
	mi.RootfsCapacity = int64(fs.Capacity)
	mi.MachineID = readTrimmed(filepath.Join(p.Etc, "machine-id"))
	mi.SystemUUID = readTrimmed(filepath.Join(p.Sys, "class/dmi/id/product_uuid"))
	mi.BootID = readTrimmed(filepath.Join(p.Proc, "sys/kernel/random/boot_id"))
	mi.KernelVersion = readTrimmed(filepath.Join(p.Proc, "sys/kernel/osrelease"))
	mi.OSImage = osImage(filepath.Join(p.Etc, "os-release"))
	dirs, _ := filepath.Glob(filepath.Join(p.Sys, "kernel/mm/hugepages/hugepages-*kB"))
	for _, d := range dirs {
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(d), "hugepages-"), "kB"), 10, 64)
		if err != nil {
			continue
		}
		if n, err := strconv.ParseInt(readTrimmed(filepath.Join(d, "nr_hugepages")), 10, 64); err == nil {
			mi.Hugepages[kb<<10] = n
		}
	}
	return mi, nil
}

func memTotal(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("nodestatus: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("nodestatus: %s: MemTotal: Invalid value: %q", path, f[1])
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("nodestatus: %s: no MemTotal", path)
}

func readTrimmed(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// osImage is os-release's PRETTY_NAME, as cAdvisor reports it.
func osImage(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "Unknown"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"'`)
		}
	}
	return "Unknown"
}
