package eviction

import (
	"flag"

	"github.com/nodekit-dev/nodekit/resources"
)

// AddFlags registers the kubelet's threshold flags on fs, bound to f:
// --eviction-hard (given, even empty, it replaces the default
// resources.DefaultEvictionHard), --eviction-soft,
// --eviction-soft-grace-period, --eviction-minimum-reclaim. ParseFlags
// reads them.
func (f *Flags) AddFlags(fs *flag.FlagSet) {
	fs.Func("eviction-hard", "hard eviction thresholds, signal<quantity or %; set, it replaces the default "+
		resources.DefaultEvictionHard, func(v string) error { f.Hard = &v; return nil })
	fs.StringVar(&f.Soft, "eviction-soft", f.Soft, "soft eviction thresholds, each with a grace period")
	fs.StringVar(&f.SoftGracePeriod, "eviction-soft-grace-period", f.SoftGracePeriod, "grace periods of the soft thresholds: memory.available=1m30s,...")
	fs.StringVar(&f.MinimumReclaim, "eviction-minimum-reclaim", f.MinimumReclaim, "what an eviction frees beyond its threshold: imagefs.available=2Gi,...")
}
