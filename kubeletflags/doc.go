// Package kubeletflags lets an agent built on a standard library
// *flag.FlagSet take the kubelet's command line unchanged: the command line
// of the kubelet v1.37 (Kubelet, Lookup), every flag of it the agent does not
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
// kubelet. The list is the Linux kubelet's: the Windows-only flags are
// unknown here.
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
//	// --config and --config-dir, read as the kubelet reads them (lenient
//	// decoding, drop-ins merged in lexical order), before defaulting:
//	loaded, err := kubeletflags.LoadConfig(configFile, configDir)
//	kc := loaded.Config // flags win: Take, ApplyConfigFlags
//	if fields := kubeletflags.IgnoredConfigFields(kc, implementedFields); len(fields) > 0 {
//		log.Info("KubeletConfiguration fields without effect", "fields", fields)
//	}
//
// --version is VersionFlag, which an agent registers itself (AcceptRest
// only checks the value): fs.Var(&v, "version", ...) with v.Default the
// version it reports; after parsing, print v.Text() and exit when it is
// not empty, else report v.Version().
//
// An agent's test pins its additions with Extra(fs), and its implemented
// config fields against ConfigFields().
//
// The kubelet parses with github.com/spf13/pflag; this package keeps the
// standard library's flag, so unknown-flag and bad-value messages, help,
// --version, deprecation notices and arguments after the flags differ a
// little (AcceptRest lists how). Values are checked as the kubelet's
// flag.Value of their kind checks them, not as its later validation of the
// whole configuration (AcceptRest says what is and is not checked).
package kubeletflags
