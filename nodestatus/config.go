package nodestatus

import (
	"context"
	"fmt"
	goruntime "runtime"

	v1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/resources"
)

// The kubelet's defaults.
const (
	DefaultMaxPods = 110
	DefaultPort    = 10250
	// DefaultKubeletVersion is what nodeInfo.kubeletVersion says unless
	// the caller sets one: the Kubernetes release of the k8s.io modules
	// nodekit is built with, marked as nodekit's.
	DefaultKubeletVersion = "v1.37.2+nodekit"
	// MaxImages and MaxNamesPerImage bound status.images (the kubelet's
	// --node-status-max-images and maxNamesPerImageInNodeStatus).
	MaxImages        = 50
	MaxNamesPerImage = 5
)

// DefaultHardEviction is the kubelet's default --eviction-hard
// (resources.DefaultEvictionHard); allocatable subtracts its
// memory.available<100Mi and nodefs.available<10%.
func DefaultHardEviction() []resources.EvictionThreshold {
	ts, err := resources.ParseThresholds("--eviction-hard", resources.DefaultEvictionHard)
	if err != nil {
		panic(err) // a constant
	}
	return ts
}

// Check is one reason the node may not be ready: nil when all is well,
// else an error whose message goes into the Ready condition (the kubelet's
// runtime, network and PLEG checks are RuntimeCheck, NetworkCheck,
// CNIConfigCheck and PLEGCheck).
type Check func(ctx context.Context) error

// Pressure reports the node's resource pressure; eviction provides it. A
// nil Pressure means none, as the kubelet says before its eviction
// manager has data.
type Pressure interface {
	MemoryPressure() bool
	DiskPressure() bool
	PIDPressure() bool
}

// EventRecorder records events on the Node; *events.Recorder (as
// client-go's record.EventRecorder) implements it.
type EventRecorder interface {
	Eventf(object apiruntime.Object, eventtype, reason, messageFmt string, args ...any)
}

// ImageLister lists the runtime's images; *runtime.Client implements it.
type ImageLister interface {
	Images(ctx context.Context) ([]kc.Image, error)
}

// Config describes the node. NodeName and NodeIP are required; zero fields
// take the kubelet's defaults.
type Config struct {
	NodeName string
	// NodeIP is the InternalIP (--node-ip). Unlike the kubelet, a loopback
	// address is accepted: nodekit's tests and many development set-ups
	// are loopback-only.
	NodeIP string
	// Hostname is the Hostname address and the kubernetes.io/hostname
	// label (default NodeName).
	Hostname string
	// Labels (--node-labels) are added to the kubelet's own.
	Labels map[string]string
	// Taints (--register-with-taints) are set at registration.
	Taints []v1.Taint
	// MaxPods is the pods capacity (--max-pods, default 110).
	MaxPods int
	// Port is daemonEndpoints.kubeletEndpoint.port (--port, default 10250).
	Port    int32
	Machine MachineInfo
	// KubeReserved, SystemReserved and HardEviction are held back from
	// allocatable (HardEviction default: DefaultHardEviction()).
	KubeReserved, SystemReserved v1.ResourceList
	HardEviction                 []resources.EvictionThreshold
	// ContainerRuntimeVersion is e.g. "containerd://1.6.20".
	ContainerRuntimeVersion string
	KubeletVersion          string
	// ReadyChecks make the Ready condition; each failing one adds its
	// message.
	ReadyChecks []Check
	Pressure    Pressure
	Images      ImageLister
	// Recorder gets the kubelet's node events when a condition changes
	// (NodeReady, NodeNotReady, NodeHasSufficientMemory, ...); nil: none.
	Recorder EventRecorder
	Clock    clock.PassiveClock
	// ControllerManagedAttachDetach (default true, the kubelet's
	// --enable-controller-attach-detach) sets the Node's
	// volumes.kubernetes.io/controller-managed-attach-detach annotation:
	// kube-controller-manager's attach-detach controller, not the node,
	// attaches and detaches its volumes. False removes it.
	ControllerManagedAttachDetach *bool
	// VolumesInUse, if set, gives status.volumesInUse: the attachable
	// volumes the node's pods use (csi.Volumes' InUse), sorted, which the
	// attach-detach controller does not detach.
	VolumesInUse func() []v1.UniqueVolumeName
}

// AnnotationControllerManagedAttach is the Node annotation saying that
// the attach-detach controller attaches the node's volumes.
const AnnotationControllerManagedAttach = "volumes.kubernetes.io/controller-managed-attach-detach"

func (c Config) withDefaults() (Config, error) {
	if errs := validation.IsDNS1123Subdomain(c.NodeName); len(errs) > 0 {
		return c, fmt.Errorf("nodestatus: Config.NodeName: Invalid value: %q: %s", c.NodeName, errs[0])
	}
	if errs := validation.IsValidIP(nil, c.NodeIP); len(errs) > 0 {
		return c, fmt.Errorf("nodestatus: Config.NodeIP: Invalid value: %q: must be an IP address", c.NodeIP)
	}
	if c.Hostname == "" {
		c.Hostname = c.NodeName
	}
	if c.MaxPods == 0 {
		c.MaxPods = DefaultMaxPods
	}
	if c.MaxPods < 0 {
		return c, fmt.Errorf("nodestatus: Config.MaxPods: Invalid value: %d: must not be negative", c.MaxPods)
	}
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.HardEviction == nil {
		c.HardEviction = DefaultHardEviction()
	}
	if c.KubeletVersion == "" {
		c.KubeletVersion = DefaultKubeletVersion
	}
	if c.ControllerManagedAttachDetach == nil {
		t := true
		c.ControllerManagedAttachDetach = &t
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	for k, v := range c.Labels {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return c, fmt.Errorf("nodestatus: Config.Labels: Invalid value: %q: %s", k, errs[0])
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return c, fmt.Errorf("nodestatus: Config.Labels[%s]: Invalid value: %q: %s", k, v, errs[0])
		}
	}
	return c, nil
}

// defaultLabels are the labels the kubelet sets and keeps on its Node.
func (c Config) defaultLabels() map[string]string {
	return map[string]string{
		v1.LabelHostname:          c.Hostname,
		v1.LabelOSStable:          goruntime.GOOS,
		v1.LabelArchStable:        goruntime.GOARCH,
		"beta.kubernetes.io/os":   goruntime.GOOS,
		"beta.kubernetes.io/arch": goruntime.GOARCH,
	}
}
