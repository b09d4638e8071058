// Package kubeletflags lets an agent built on a standard library
// *flag.FlagSet take the kubelet's command line unchanged: the command line
// of the kubelet v1.34 (Kubelet, Lookup), every flag of it the agent does not
// implement registered as accepted-without-effect (AcceptRest), the
// agent's own additions listed (Extra), and the KubeletConfiguration fields a
// --config file sets that the agent does not use (IgnoredConfigFields).
//
// An existing kubelet command line or systemd unit then works as it is:
// the flags the agent defines behave as it implements them; every other
// kubelet flag is accepted, its value checked as the kubelet checks it (a
// bad bool, int, duration, IP, map, quantity, taint... is an error naming
// the flag and the value), and reported by Accepted.Set so that the agent
// logs it once; a flag the kubelet does not have is an error, as in the
// kubelet.
//
//	fs := flag.NewFlagSet("kubelet", flag.ContinueOnError)
//	kubeconfig := fs.String("kubeconfig", "", "...") // the flags the agent implements
//	accepted := kubeletflags.AcceptRest(fs)         // all the other kubelet flags
//	if err := fs.Parse(kubeletflags.NormalizeArgs(fs, os.Args[1:])); err != nil {
//		if errors.Is(err, flag.ErrHelp) {
//			os.Exit(0) // usage printed, as kubelet --help
//		}
//		os.Exit(1)
//	}
//	if names := accepted.Set(); len(names) > 0 {
//		log.Info("kubelet flags accepted without effect", "flags", names)
//	}
//	// after reading --config into kc (before defaulting):
//	if fields := kubeletflags.IgnoredConfigFields(kc, implementedFields); len(fields) > 0 {
//		log.Info("KubeletConfiguration fields without effect", "fields", fields)
//	}
//
// An agent's test pins its additions with Extra(fs), and its implemented
// config fields against ConfigFields().
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
//     flag.ErrHelp (AcceptRest leaves help to flag); the kubelet prints it
//     to stdout and exits 0.
//   - --version: the kubelet prints its version and exits; here it is an
//     accepted flag like any other, unless the agent defines it.
//   - Deprecation: pflag prints "Flag --x has been deprecated, ..." when a
//     deprecated flag is used; here Flag.Deprecated says so, and the usage
//     text marks it.
//   - Error text: flag says `invalid value "ten" for flag -read-only-port:
//     invalid syntax`, pflag `invalid argument "ten" for "--read-only-port"
//     flag: strconv.ParseInt: parsing "ten": invalid syntax`.
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
// for a flag that has an effect.
//
// The list is the Linux kubelet's: --windows-service and
// --windows-priorityclass, registered only on Windows, are unknown flags
// here.
package kubeletflags
