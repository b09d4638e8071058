package kubeletflags

import (
	"fmt"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"strings"

	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/version"
)

// VersionFlag is the kubelet's --version (component-base's verflag) as a
// flag.Value: "--version" or "--version=true" asks for the version to be
// printed and the process to exit, "--version=raw" for every build fact as
// Go syntax, "--version=vX.Y.Z..." for that version to be reported
// (nodeInfo.kubeletVersion) instead of Default, the process going on. As in
// the kubelet, a reported version must keep Default's major, minor and
// patch: "v1.37.2-rc.1+custom" is taken for a v1.37.2 default, "v1.38.0"
// is refused.
type VersionFlag struct {
	// Default is the version the agent reports when none is given
	// (nodestatus.DefaultKubeletVersion in the reference agent).
	Default string
	// Print is "", "true" or "raw".
	Print string
	// Reported is the version given, or "".
	Reported string
}

// IsBoolFlag lets --version stand alone, as pflag's NoOptDefVal "true".
func (v *VersionFlag) IsBoolFlag() bool { return true }

func (v *VersionFlag) String() string {
	switch {
	case v == nil:
		return "false"
	case v.Print != "":
		return v.Print
	case v.Reported != "":
		return v.Reported
	}
	return "false"
}

// Set takes a strconv.ParseBool spelling, "raw", or a semantic version
// starting with "v".
func (v *VersionFlag) Set(s string) error {
	switch {
	case s == "raw":
		v.Print = "raw"
		return nil
	case strings.HasPrefix(s, "v"):
		if err := sameRelease(s, v.Default); err != nil {
			return err
		}
		v.Reported = s
		return nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("%q is neither true, false, raw nor a version vX.Y.Z", s)
	}
	v.Print = ""
	if b {
		v.Print = "true"
	}
	return nil
}

// sameRelease is component-base's ValidateDynamicVersion: s is semantic
// and, unless def is empty, has def's major, minor and patch.
func sameRelease(s, def string) error {
	got, err := utilversion.ParseSemantic(s)
	if err != nil {
		return err
	}
	if def == "" || s == def {
		return nil
	}
	want, err := utilversion.ParseSemantic(def)
	if err != nil {
		return fmt.Errorf("default version: %w", err)
	}
	if got.Major() != want.Major() || got.Minor() != want.Minor() || got.Patch() != want.Patch() {
		return fmt.Errorf("version %q must match major/minor/patch of default version %q", s, def)
	}
	return nil
}

// Version is the version to report: Reported, else Default.
func (v *VersionFlag) Version() string {
	if v.Reported != "" {
		return v.Reported
	}
	return v.Default
}

// Text is what the kubelet prints when asked: "Kubernetes <version>"
// (kubeadm and other tools parse that line) or, for raw, the build facts
// as Go syntax; "" when nothing is to be printed.
func (v *VersionFlag) Text() string {
	switch v.Print {
	case "true":
		return "Kubernetes " + v.Version() + "\n"
	case "raw":
		return fmt.Sprintf("%#v\n", VersionInfo(v.Version()))
	}
	return ""
}

// VersionInfo is the version.Info of this binary reporting gitVersion
// (v1.37.2+nodekit): the Go toolchain and platform, and the commit and
// time of the module's VCS stamp when the build has one.
func VersionInfo(gitVersion string) version.Info {
	info := version.Info{GitVersion: gitVersion, GoVersion: goruntime.Version(), Compiler: goruntime.Compiler,
		Platform: goruntime.GOOS + "/" + goruntime.GOARCH, GitTreeState: "unknown"}
	if v, err := utilversion.ParseSemantic(gitVersion); err == nil {
		info.Major, info.Minor = strconv.Itoa(int(v.Major())), strconv.Itoa(int(v.Minor()))
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.GitCommit = s.Value
			case "vcs.time":
				info.BuildDate = s.Value
			case "vcs.modified":
				info.GitTreeState = map[string]string{"true": "dirty", "false": "clean"}[s.Value]
			}
		}
	}
	return info
}
