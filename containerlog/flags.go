package containerlog

import (
	"flag"

	"k8s.io/apimachinery/pkg/api/resource"
)

// AddFlags registers the kubelet's log rotation flags on fs, with their
// defaults: --container-log-max-size and --container-log-max-files (both
// deprecated for the config file's containerLogMaxSize and
// containerLogMaxFiles, which have no flags of their own for
// containerLogMaxWorkers and containerLogMonitorInterval).
func (c *Config) AddFlags(fs *flag.FlagSet) {
	c.MaxSize, c.MaxFiles = DefaultMaxSize(), DefaultMaxFiles
	fs.Var(quantityFlag{&c.MaxSize}, "container-log-max-size",
		"Set the maximum size (e.g. 10Mi) of container log file before it is rotated.")
	fs.IntVar(&c.MaxFiles, "container-log-max-files", DefaultMaxFiles,
		"Set the maximum number of container log files that can be present for a container. The number must be >= 2.")
}

// quantityFlag is a resource.Quantity as a flag.Value.
type quantityFlag struct{ q *resource.Quantity }

func (f quantityFlag) String() string {
	if f.q == nil {
		return ""
	}
	return f.q.String()
}

func (f quantityFlag) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return err
	}
	*f.q = q
	return nil
}
