package kubeletflags

import (
	"flag"
	"fmt"
	"sort"
	"strings"
)

// Version is the kubelet release whose command line Kubelet lists.
const Version = "v1.37.2"

// Flag is one flag of the kubelet's command line.
type Flag struct {
	// Name is the long name, without dashes ("rotate-certificates").
	Name string
	// Kind is how the kubelet parses the value: one of the Kind constants.
	Kind string
	// Default is the kubelet's command-line default as `kubelet --help`
	// shows it (pflag's DefValue: "[]" for an empty list, "" for an empty
	// map).
	Default string
	// Deprecated is true when the kubelet marks the flag deprecated: it
	// still accepts it and prints a warning. Most are KubeletConfiguration
	// fields, deprecated in favour of the --config file.
	Deprecated bool
}

// The kinds of values, named after the kubelet's pflag.Value types.
const (
	KindBool     = "bool"     // strconv.ParseBool; the flag alone means true
	KindString   = "string"   // any value
	KindInt      = "int"      // strconv.ParseInt(s, 0, strconv.IntSize) (cadvisor's Go flags; none is left in v1.37)
	KindInt32    = "int32"    // strconv.ParseInt(s, 0, 32)
	KindInt64    = "int64"    // strconv.ParseInt(s, 0, 64)
	KindDuration = "duration" // time.ParseDuration
	// KindStringSlice is a comma-separated list read as one CSV record
	// (pflag's stringSlice); repeated flags append.
	KindStringSlice = "stringSlice"
	// KindIP is an IP address (k8s.io/utils/net.ParseIPSloppy), or empty.
	KindIP = "ip"
	// KindMapStringString is "k=v,k2=v2" (cliflag.MapStringString).
	KindMapStringString = "mapStringString"
	// KindMapStringStringNoSplit is one "k=v" per flag, the value may hold
	// commas (cliflag.NewMapStringStringNoSplit).
	KindMapStringStringNoSplit = "mapStringStringNoSplit"
	// KindQuantityMap is "cpu=200m,memory=500Mi,ephemeral-storage=1Gi,
	// pid=1000": a mapStringString whose names and non-negative quantities
	// the kubelet checks as it starts (parseResourceList); checked here at
	// parse time.
	KindQuantityMap = "quantityMap"
	// KindLangleSeparatedMap is "signal<threshold,..." (--eviction-hard).
	KindLangleSeparatedMap = "langleSeparatedMapStringString"
	// KindColonSeparatedMultimap is "name:value,..." (--manifest-url-header).
	KindColonSeparatedMultimap = "colonSeparatedMultimapStringString"
	// KindLabels is "k=v,k2" (cliflag.ConfigurationMap) with the label
	// checks of the kubelet's ValidateKubeletFlags (--node-labels).
	KindLabels = "labels"
	// KindMapStringBool is "Name=true,Other=false" (--feature-gates). The
	// names are not checked: the kubelet rejects an unknown gate only when
	// it applies them.
	KindMapStringBool = "mapStringBool"
	// KindTaints is "key=value:Effect,..." (--register-with-taints).
	KindTaints = "taints"
	// KindReservedMemory is "0:memory=1Gi,hugepages-1Mi=2Gi;1:memory=2Gi".
	KindReservedMemory = "reservedMemory"
	// KindQuantity is a resource.Quantity ("64Ki").
	KindQuantity = "quantity"
	// KindLevel is klog's verbosity, 0 to 2^31-1 in decimal (-v).
	KindLevel = "Level"
	// KindVModule is "pattern=N,..." (--vmodule).
	KindVModule = "pattern=N,..."
	// KindVersion is --version: alone or true/false, "raw", or a
	// semantic version "vX.Y.Z" to report.
	KindVersion = "version"
)

var byName = func() map[string]Flag {
	m := make(map[string]Flag, len(kubeletV137))
	for _, f := range kubeletV137 {
		m[f.Name] = f
	}
	return m
}()

// Kubelet returns every flag of the kubelet v1.37 command line (Linux),
// sorted by name, deprecated ones included.
func Kubelet() []Flag {
	out := append([]Flag(nil), kubeletV137...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup returns the kubelet's flag of that name (without dashes).
func Lookup(name string) (Flag, bool) {
	f, ok := byName[name]
	return f, ok
}

// Accepted records which of the flags AcceptRest registered were given.
type Accepted struct {
	given map[string]bool
}

// Set returns the sorted names of the accepted-but-unimplemented flags
// given on the command line, for the agent to log once.
func (a *Accepted) Set() []string {
	out := make([]string, 0, len(a.given))
	for name := range a.given {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// AcceptRest registers on fs every kubelet flag fs does not already define,
// each with a flag.Value that checks the value as the kubelet's flag of that
// kind would (an error names the flag and the value, as flag.FlagSet
// reports it) and otherwise only records that it was given: after
// fs.Parse, Set lists them.
//
// help is left out: flag.FlagSet handles -h and -help itself (usage, then
// flag.ErrHelp).
//
// # What is checked
//
// An accepted flag's value gets the checks of the kubelet's flag.Value of
// its kind (Flag.Kind; compared with the kubelet's own flag set on thousands
// of values), and for --kube-reserved, --system-reserved and --node-labels
// also the checks the kubelet makes on them as it starts (parseResourceList,
// ValidateKubeletFlags), since those fail a kubelet too. Not checked: what
// the kubelet validates later in the configuration as a whole (the allowed
// values of --authorization-mode, port ranges, the names of feature gates,
// the binary's own version against --version=vX.Y.Z), which only matters
// for a flag that has an effect. The list is the Linux kubelet's:
// --windows-service and --windows-priorityclass, registered only on
// Windows, are unknown flags here.
//
// # Where the standard flag package differs from the kubelet's pflag
//
// The kubelet parses its command line with github.com/spf13/pflag; this
// package keeps the standard library's flag. What users see differently:
//
//   - An unknown flag: flag says "flag provided but not defined: -foo", the
//     kubelet "failed to parse kubelet flag: unknown flag: --foo". Both fail.
//   - A boolean flag stands alone (--rotate-certificates) or takes its value
//     after "=" (--rotate-certificates=false), in both; "--rotate-certificates
//     false" makes "false" an argument, in both.
//   - Arguments: flag stops at the first argument that is not a flag, pflag
//     goes on parsing flags after it; the kubelet refuses any argument
//     ("unknown command"), and an agent should refuse fs.Args() likewise.
//   - Underscores: the kubelet's flag set normalizes --housekeeping_interval
//     to --housekeeping-interval. flag does not; pass the arguments through
//     NormalizeArgs, which does.
//   - Shorthands: the kubelet has two, -h for --help and -v for --v. -v=2,
//     -v 2 and --v=2 work in both; pflag's -v2 (value glued to the
//     shorthand) is here an unknown flag "v2".
//   - Single-dash long names (-kubeconfig=...) work with flag; pflag would
//     read them as shorthands and fail. Here more is accepted, not less.
//   - Help: -h, -help and --help print the usage to fs.Output() and return
//     flag.ErrHelp; the kubelet prints it to stdout and exits 0.
//   - --version: the kubelet prints its version and exits; here it is an
//     accepted flag like any other, unless the agent defines it.
//   - Deprecation: pflag prints "Flag --x has been deprecated, ..." when a
//     deprecated flag is used; here Flag.Deprecated says so, and the usage
//     text marks it.
//   - Error text: flag says `invalid value "ten" for flag -read-only-port:
//     invalid syntax`, pflag `invalid argument "ten" for "--read-only-port"
//     flag: strconv.ParseInt: parsing "ten": invalid syntax`.
func AcceptRest(fs *flag.FlagSet) *Accepted {
	a := &Accepted{given: map[string]bool{}}
	for _, f := range Kubelet() {
		if f.Name == "help" || fs.Lookup(f.Name) != nil {
			continue
		}
		// A back-quoted kind is the placeholder flag.PrintDefaults shows;
		// booleans have none.
		kind := "`" + f.Kind + "`"
		if f.Kind == KindBool || f.Kind == KindVersion {
			kind = f.Kind
		}
		usage := fmt.Sprintf("accepted for compatibility with the kubelet %s, without effect (%s)", Version, kind)
		if f.Deprecated {
			usage += "; deprecated in the kubelet"
		}
		fs.Var(&value{flag: f, given: a.given}, f.Name, usage)
	}
	return a
}

// Extra returns the sorted names of the flags defined on fs that the
// kubelet v1.37 does not have: the agent's own additions.
func Extra(fs *flag.FlagSet) []string {
	var out []string
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := byName[f.Name]; !ok && f.Name != "h" {
			out = append(out, f.Name)
		}
	})
	return out // VisitAll goes in lexicographical order
}

// NormalizeArgs rewrites flag names written with underscores
// (--housekeeping_interval=5s) to the hyphenated names, as the kubelet's
// pflag.FlagSet does with its word-separator normalization; flag.FlagSet
// would reject them. Values are left alone: fs tells which flags are
// booleans (whose value, if any, is in the same argument). It stops where
// fs.Parse stops, at "--" or at the first argument that is not a flag.
func NormalizeArgs(fs *flag.FlagSet, args []string) []string {
	out := append([]string(nil), args...)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if len(a) < 2 || a[0] != '-' || a == "--" {
			break
		}
		dashes := 1
		if a[1] == '-' {
			dashes = 2
		}
		name, val, hasVal := strings.Cut(a[dashes:], "=")
		if name == "" || name[0] == '-' || name[0] == '=' {
			break // flag.FlagSet's "bad flag syntax"
		}
		name = strings.ReplaceAll(name, "_", "-")
		if hasVal {
			out[i] = a[:dashes] + name + "=" + val
			continue
		}
		out[i] = a[:dashes] + name
		if f := fs.Lookup(name); f != nil && !isBool(f.Value) {
			i++ // the next argument is the value
		}
	}
	return out
}

func isBool(v flag.Value) bool {
	b, ok := v.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
