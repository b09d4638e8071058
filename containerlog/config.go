package containerlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/resource"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

// The kubelet's defaults (KubeletConfiguration v1beta1) and its lower
// bounds (pkg/kubelet/apis/config/validation).
const (
	DefaultMaxFiles        = 5
	DefaultMaxWorkers      = 1
	DefaultMonitorInterval = 10 * time.Second
	// MinMonitorInterval is the smallest MonitorInterval the kubelet
	// accepts.
	MinMonitorInterval = 3 * time.Second
)

// DefaultMaxSize is the kubelet's containerLogMaxSize, 10Mi.
func DefaultMaxSize() resource.Quantity { return resource.MustParse("10Mi") }

// StatusReader reads a container's status, for its log path and state.
// *runtime.Client implements it, as does the cri-api's
// internalapi.RuntimeService.
type StatusReader interface {
	ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
}

// Runtime is the part of a CRI runtime service the Manager uses: the
// running containers, their log paths, and the reopen that makes the
// runtime write to a new file at the same path after a rotation.
// *runtime.Client implements it without an adapter.
type Runtime interface {
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	StatusReader
	ReopenContainerLog(ctx context.Context, id string) error
}

var _ Runtime = internalapi.RuntimeService(nil)

// Config configures a Manager. Runtime is required; zero fields take the
// kubelet's defaults.
type Config struct {
	Runtime Runtime
	// MaxSize is the size at which a container's log is rotated (zero:
	// 10Mi; negative: never rotate, as the kubelet). A quantity, not
	// bytes, because that is what the kubelet's --container-log-max-size
	// and containerLogMaxSize hold ("10Mi"): a flag parser hands over a
	// resource.QuantityValue (a flag.Value), a config file
	// resource.ParseQuantity's result, and the check that it is a whole
	// number of bytes stays here, with the kubelet's message.
	MaxSize resource.Quantity
	// MaxFiles is how many files a container's log may have, the live
	// one included (zero: 5; must be greater than 1).
	MaxFiles int
	// MaxWorkers is how many containers are rotated at once (zero: 1).
	MaxWorkers int
	// MonitorInterval is how often Run looks at every running
	// container's log (zero: 10s; at least 3s).
	MonitorInterval time.Duration
	// Clock times Run's passes and stamps rotated files (nil: the real
	// clock).
	Clock clock.WithTicker
	// Log gets Run's failures, as the kubelet logs them (zero: discarded).
	Log logr.Logger
}

// withDefaults checks c as the kubelet validates its configuration, with
// the kubelet's messages after the field and the value, and fills in the
// defaults. It also returns MaxSize in bytes.
func (c Config) withDefaults() (Config, int64, error) {
	if c.Runtime == nil {
		return c, 0, errors.New("containerlog: Config.Runtime: Required value")
	}
	if c.MaxSize.IsZero() {
		c.MaxSize = DefaultMaxSize()
	}
	maxSize, ok := c.MaxSize.AsInt64()
	if !ok {
		return c, 0, fmt.Errorf("containerlog: Config.MaxSize: Invalid value: %q: invalid max log size", c.MaxSize.String())
	}
	if c.MaxFiles == 0 {
		c.MaxFiles = DefaultMaxFiles
	}
	if c.MaxFiles <= 1 {
		return c, 0, fmt.Errorf("containerlog: Config.MaxFiles: Invalid value: %d: invalid configuration: containerLogMaxFiles must be greater than 1", c.MaxFiles)
	}
	if c.MaxWorkers == 0 {
		c.MaxWorkers = DefaultMaxWorkers
	}
	if c.MaxWorkers < 1 {
		return c, 0, fmt.Errorf("containerlog: Config.MaxWorkers: Invalid value: %d: invalid configuration: containerLogMaxWorkers must be greater than or equal to 1", c.MaxWorkers)
	}
	if c.MonitorInterval == 0 {
		c.MonitorInterval = DefaultMonitorInterval
	}
	if c.MonitorInterval < MinMonitorInterval {
		return c, 0, fmt.Errorf("containerlog: Config.MonitorInterval: Invalid value: %s: invalid configuration: containerLogMonitorInterval must be a positive time duration greater than or equal to 3s", c.MonitorInterval)
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return c, maxSize, nil
}
