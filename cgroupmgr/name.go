package cgroupmgr

import (
	"fmt"
	"path"
	"strings"

	"github.com/nodekit-dev/nodekit/podpath"
)

// CgroupName is the kubelet's driver-independent cgroup name: one component
// per level, e.g. {"kubepods", "burstable", "pod1234-abcd"}. The empty name is
// the root. Components may not contain "/" or "_" (the systemd form maps "-"
// to "_", so "_" would make the mapping irreversible).
type CgroupName []string

// RootCgroupName is the root of the hierarchy.
var RootCgroupName = CgroupName{}

const systemdSuffix = ".slice"

// NewCgroupName appends components to base, refusing components that are
// empty, ".", "..", or contain "/" or "_". base is not modified.
func NewCgroupName(base CgroupName, components ...string) (CgroupName, error) {
	for _, c := range components {
		if err := validateComponent(c); err != nil {
			return nil, err
		}
	}
	return append(append(CgroupName{}, base...), components...), nil
}

// validateComponent applies podpath's rule for one path element (a cgroup
// is a directory: no "/", ".", "..", NUL, nor over 255 bytes) and refuses
// "_", which the systemd form reserves.
func validateComponent(c string) error {
	if msgs := podpath.ValidateElement(c); len(msgs) > 0 {
		return fmt.Errorf("cgroupmgr: cgroup name component %s: %s", podpath.Quote(c), msgs[0])
	}
	if strings.Contains(c, "_") {
		return fmt.Errorf("cgroupmgr: cgroup name component %s: must not contain \"_\"", podpath.Quote(c))
	}
	return nil
}

// Validate checks every component as NewCgroupName does.
func (n CgroupName) Validate() error {
	for _, c := range n {
		if err := validateComponent(c); err != nil {
			return err
		}
	}
	return nil
}

// ToCgroupfs returns the cgroupfs driver's path: "/kubepods/burstable/pod<uid>".
func (n CgroupName) ToCgroupfs() string {
	return "/" + path.Join(n...)
}

// ToSystemd returns the systemd driver's path, every level a slice named after
// all its ancestors, "-" escaped as "_":
// {"kubepods","burstable","pod12-34"} -> "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12_34.slice".
func (n CgroupName) ToSystemd() string {
	if len(n) == 0 || (len(n) == 1 && n[0] == "") {
		return "/"
	}
	var b strings.Builder
	prefix := ""
	for _, part := range n {
		part = strings.ReplaceAll(part, "-", "_")
		if prefix != "" {
			prefix += "-"
		}
		prefix += part
		b.WriteString("/" + prefix + systemdSuffix)
	}
	return b.String()
}

// ParseCgroupfsToCgroupName is the inverse of ToCgroupfs.
func ParseCgroupfsToCgroupName(name string) CgroupName {
	components := strings.Split(strings.TrimPrefix(name, "/"), "/")
	if len(components) == 1 && components[0] == "" {
		return CgroupName{}
	}
	return CgroupName(components)
}

// ParseSystemdToCgroupName is the inverse of ToSystemd; like the kubelet's it
// only needs the last path element ("kubepods-burstable-pod12_34.slice").
func ParseSystemdToCgroupName(name string) CgroupName {
	base := strings.TrimSuffix(path.Base(name), systemdSuffix)
	if base == "" || base == "/" || base == "." || base == "-" {
		return CgroupName{}
	}
	parts := strings.Split(base, "-")
	out := make(CgroupName, 0, len(parts))
	for _, p := range parts {
		out = append(out, strings.ReplaceAll(p, "_", "-"))
	}
	return out
}

// Driver is the cgroup naming scheme, as the kubelet's --cgroup-driver.
type Driver string

const (
	// DriverCgroupfs names cgroups as plain directories (the default).
	DriverCgroupfs Driver = "cgroupfs"
	// DriverSystemd names cgroups as nested systemd slices.
	DriverSystemd Driver = "systemd"
)

// Path converts name to this driver's path form.
func (d Driver) Path(name CgroupName) string {
	if d == DriverSystemd {
		return name.ToSystemd()
	}
	return name.ToCgroupfs()
}

// Parse converts a path in this driver's form back to a CgroupName.
func (d Driver) Parse(p string) CgroupName {
	if d == DriverSystemd {
		return ParseSystemdToCgroupName(p)
	}
	return ParseCgroupfsToCgroupName(p)
}

// parseCgroupRoot turns the --cgroup-root value into a name, refusing paths
// that climb out of the hierarchy.
func parseCgroupRoot(d Driver, root string) (CgroupName, error) {
	for _, c := range strings.Split(root, "/") {
		if c == ".." {
			return nil, fmt.Errorf("cgroupmgr: CgroupRoot %q: must not contain \"..\"", root)
		}
	}
	if d == DriverSystemd && strings.Count(strings.Trim(root, "/"), "/") > 0 {
		// "/a.slice/a-b.slice": the last element carries the whole name.
		root = path.Base(root)
	}
	name := d.Parse(path.Clean("/" + root))
	if err := name.Validate(); err != nil {
		return nil, fmt.Errorf("cgroupmgr: CgroupRoot %q: %w", root, err)
	}
	return name, nil
}
