package nodeagent

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/cgroupmgr"
	"github.com/nodekit-dev/nodekit/containerlog"
	"github.com/nodekit-dev/nodekit/eviction"
	"github.com/nodekit-dev/nodekit/gc"
	"github.com/nodekit-dev/nodekit/kubeapi"
	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/nodestatus"
	"github.com/nodekit-dev/nodekit/pleg"
	"github.com/nodekit-dev/nodekit/runtime"
)

// The kubelet's defaults for the zero fields of Config.
const (
	DefaultRootDir            = "/var/lib/kubelet"
	DefaultSyncFrequency      = time.Minute
	DefaultFileCheckFrequency = 20 * time.Second
	DefaultMaxPods            = 110
	DefaultCgroupRoot         = "/"
)

// Config is one node agent's configuration: the kubelet's settings that
// the composition reads, plus the parts the caller owns (the runtime
// connection, the API client, the metrics registries, the clock). Zero
// fields get the kubelet's defaults (New); the caller parses flags and
// config files into it.
type Config struct {
	// NodeName is the node's name (the kubelet's --hostname-override);
	// required, as a process may hold many agents.
	NodeName string
	// NodeIP is the node's InternalIP (--node-ip), reported for
	// host-network pods and probed there; required.
	NodeIP string
	// RootDir holds pod volumes and the node's machine facts (--root-dir).
	RootDir string
	// PodLogsDir is the container log root (kuberuntime.DefaultPodLogsDir).
	PodLogsDir string
	// ManifestPath and ManifestURL are the static pod sources
	// (--pod-manifest-path, --manifest-url); empty: none.
	ManifestPath, ManifestURL string
	// SyncFrequency is the longest time between syncs of a pod (1m);
	// RelistPeriod the PLEG's (1s); FileCheckFrequency how often
	// ManifestPath is re-read (20s); NodeStatusUpdateFrequency how often
	// the Node's status is computed (10s).
	SyncFrequency, RelistPeriod, FileCheckFrequency, NodeStatusUpdateFrequency time.Duration
	// EventedPLEG is the kubelet's EventedPLEG feature gate: the runtime's
	// container events drive the PLEG, which relists only every 300s as a
	// safety net, and every RelistPeriod again if the events fail.
	EventedPLEG bool
	// ContainerLogs configures container log rotation (the kubelet's
	// containerLogMaxSize, containerLogMaxFiles, containerLogMaxWorkers,
	// containerLogMonitorInterval; package containerlog's defaults); its
	// Runtime, Clock and Log are the agent's. With RuntimeOnHost only: the
	// logs must be this host's files.
	ContainerLogs containerlog.Config
	// ContainersLogDir is where each container's log gets the kubelet's
	// <pod>_<namespace>_<container>-<id>.log link, for log shippers
	// (default /var/log/containers). With RuntimeOnHost only.
	ContainersLogDir string
	// CAdvisorHousekeepingInterval is how often /metrics/cadvisor's
	// cgroups are read (--housekeeping-interval); default 10s.
	CAdvisorHousekeepingInterval time.Duration
	// LeaseDurationSeconds is the node lease's duration (40).
	LeaseDurationSeconds int32
	// MaxPods is the pods capacity (110); more are rejected at admission.
	MaxPods int
	// Services, in cluster mode, lists the Services for the containers'
	// environment; nil: the agent keeps its own (a ServiceCache on Client).
	Services kuberuntime.Services
	// ClusterDomain is --cluster-domain: a pod with a subdomain is named by
	// its FQDN in its /etc/hosts.
	ClusterDomain string
	// AllowedUnsafeSysctls are the sysctls beyond admission.SafeSysctls a
	// pod may set (--allowed-unsafe-sysctls; a trailing * allows a prefix).
	AllowedUnsafeSysctls []string
	// Port is the kubelet endpoint the Node advertises (10250); the
	// caller serves it.
	Port int32
	// Labels and Taints are the node's (--node-labels,
	// --register-with-taints).
	Labels map[string]string
	Taints []v1.Taint
	// KubeReserved and SystemReserved are held back from allocatable.
	KubeReserved, SystemReserved v1.ResourceList
	// Machine is the node's capacity and identity; nil: read from this
	// host (a hollow node declares its own).
	Machine *nodestatus.MachineInfo
	// CgroupsPerQOS makes the QoS and pod cgroups (default true; never
	// without RuntimeOnHost). CgroupRoot is their parent ("/"),
	// CgroupDriver their naming (cgroupfs).
	CgroupsPerQOS *bool
	CgroupRoot    string
	CgroupDriver  cgroupmgr.Driver
	// FailCgroupV1 refuses to start on a cgroup v1 host (default true, as
	// the kubelet's failCgroupV1 since v1.35); New then fails with
	// ErrCgroupV1. Set false, the agent runs there and, in cluster mode,
	// warns with the kubelet's CgroupV1 event on the Node. Only checked
	// with RuntimeOnHost: another runtime's containers are not in this
	// host's cgroups.
	FailCgroupV1 *bool
	// ControllerManagedAttachDetach (default true, --enable-controller-
	// attach-detach) leaves attaching the node's volumes to the
	// attach-detach controller (nodestatus.Config's).
	ControllerManagedAttachDetach *bool
	// KubeletVersion is the node's status.nodeInfo.kubeletVersion
	// (default nodestatus.DefaultKubeletVersion, "v1.37.2+nodekit": the
	// kubelet release whose behaviour the agent follows).
	KubeletVersion string
	// SingleProcessOOMKill: on cgroup v2, an OOM kill takes one process,
	// not the container (the kubelet's singleProcessOOMKill).
	SingleProcessOOMKill bool
	// MaxParallelPodStarts is kuberuntime.ManagerConfig's: how many pods
	// are in the runtime's start calls at once (0: 3 per CPU; negative:
	// unbounded, as the kubelet).
	MaxParallelPodStarts int
	// UserNamespacesIDsPerPod is the kubelet's userNamespaces.idsPerPod:
	// how many host IDs each pod with hostUsers: false gets (0: 65536; a
	// multiple of 65536, at most 2^32-1). The range comes from the user
	// kubelet's /etc/subuid and /etc/subgid entries (package userns).
	UserNamespacesIDsPerPod int64
	// ContainerGC and ImageGC are the garbage collection policies (nil:
	// gc's defaults, as the kubelet's); SandboxImage is kept by image GC
	// when the runtime does not name its own.
	ContainerGC  *gc.ContainerPolicy
	ImageGC      *gc.ImagePolicy
	SandboxImage string
	// Eviction configures the eviction manager over this host's signals
	// (statfs, /proc, cgroups); nil: no eviction manager, hence no
	// pressure conditions (a hollow node has no host of its own).
	Eviction *EvictionConfig
	// EnableDebuggingHandlers serves /debug/pprof/ on the API handler
	// (default true).
	EnableDebuggingHandlers *bool
	// Runtime is the connected CRI client (containerd or runtime/fake);
	// required. The caller closes it after Run returns.
	Runtime *runtime.Client
	// RuntimeOnHost says the runtime's containers run on this host, in
	// its cgroups, with their images on its filesystems (default true, as
	// the kubelet's runtime). Then the agent makes the QoS and pod cgroups
	// (CgroupsPerQOS), tells the runtime manager the host's cgroup version,
	// and its eviction manager reads the runtime's image filesystem. False
	// for a runtime whose containers are not this host's (runtime/fake,
	// in-process or over a socket; a hollow node's): none of that is done.
	// With it and an API server, CSI drivers register through
	// <RootDir>/plugins_registry (a driver's volumes are this host's).
	RuntimeOnHost *bool
	// Client is the API server's (a kubeapi.Clientset; a client-go
	// clientset through kubeapi/clientgo.Adapt); nil: standalone. Set, the agent joins
	// the cluster: the Node and its lease, the API server's pods, mirror
	// pods for static ones, events and pod statuses. The caller owns its
	// transport (several agents may share one).
	Client kubeapi.Interface
	// EventClient sends the agent's events and HeartbeatClient its Node
	// status and lease, each with rate limits of its own, as the kubelet's
	// clients do, so that neither waits behind pod status writes (nil:
	// Client). APIClient builds all three.
	EventClient, HeartbeatClient kubeapi.Interface
	// EventCacheSize bounds each LRU cache of the correlator the agent's
	// events go through (0: events.DefaultCacheSize, 4096, as the
	// kubelet). Its caches are the agent's largest per-node state after
	// its pods; many agents in one process (hollow nodes) may set a
	// smaller one, so that fewer repeated events are aggregated.
	EventCacheSize int
	// Registerer gets the agent's metrics (PLEG, pod sources, runtime
	// sync, pod workers); Gatherer is served on /metrics by the handlers.
	// ProbeRegisterer and ProbeGatherer likewise for /metrics/probes.
	// nil: not registered, not served. The process's Go and process
	// collectors are the caller's.
	Registerer, ProbeRegisterer prometheus.Registerer
	Gatherer, ProbeGatherer     prometheus.Gatherer
	// Clock paces every loop (default clock.RealClock{}).
	Clock clock.WithTicker
	Log   logr.Logger
}

// CgroupV1Warning is the kubelet's message for a cgroup v1 host, in the
// Warning event (reason CgroupV1) on the Node when the agent runs there.
const CgroupV1Warning = "cgroup v1 detected. cgroup v1 support is deprecated and will be removed in a future release. " +
	"Please migrate to cgroup v2. More information at https://git.k8s.io/enhancements/keps/sig-node/5573-remove-cgroup-v1"

// ErrCgroupV1 is New's error on a cgroup v1 host unless
// Config.FailCgroupV1 is false; its text is the kubelet's.
var ErrCgroupV1 = errors.New("kubelet is configured to not run on a host using cgroup v1. " +
	"cgroup v1 support is unsupported and will be removed in a future release")

// EvictionConfig is the kubelet's eviction settings.
type EvictionConfig struct {
	// Flags are the thresholds as the kubelet's flags spell them.
	Flags eviction.Flags
	// PressureTransitionPeriod is --eviction-pressure-transition-period
	// (0: 5m).
	PressureTransitionPeriod time.Duration
	// MaxPodGracePeriodSeconds is --eviction-max-pod-grace-period.
	MaxPodGracePeriodSeconds int64
	// LocalStorageCapacityIsolation is the config field (nil: true).
	LocalStorageCapacityIsolation *bool
}

func (c Config) withDefaults() (Config, error) {
	switch {
	case c.NodeName == "":
		return c, fmt.Errorf("nodeagent: Config.NodeName: Required value")
	case c.NodeIP == "":
		return c, fmt.Errorf("nodeagent: Config.NodeIP: Required value")
	case c.Runtime == nil:
		return c, fmt.Errorf("nodeagent: Config.Runtime: Required value")
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{{"SyncFrequency", &c.SyncFrequency, DefaultSyncFrequency}, {"RelistPeriod", &c.RelistPeriod, pleg.DefaultRelistPeriod},
		{"FileCheckFrequency", &c.FileCheckFrequency, DefaultFileCheckFrequency},
		{"NodeStatusUpdateFrequency", &c.NodeStatusUpdateFrequency, nodestatus.DefaultUpdateFrequency}} {
		if *d.v < 0 {
			return c, fmt.Errorf("nodeagent: Config.%s: Invalid value: %s: must not be negative", d.name, *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"MaxPods", c.MaxPods}, {"LeaseDurationSeconds", int(c.LeaseDurationSeconds)}, {"Port", int(c.Port)}} {
		if n.v < 0 {
			return c, fmt.Errorf("nodeagent: Config.%s: Invalid value: %d: must not be negative", n.name, n.v)
		}
	}
	if n := c.UserNamespacesIDsPerPod; n != 0 {
		// The kubelet's validation, with its messages.
		switch {
		case n < 65536:
			return c, fmt.Errorf("nodeagent: Config.UserNamespacesIDsPerPod: invalid configuration: userNamespaces.idsPerPod must not be less than 65536")
		case n%65536 != 0:
			return c, fmt.Errorf("nodeagent: Config.UserNamespacesIDsPerPod: invalid configuration: userNamespaces.idsPerPod must be a multiple of 65536")
		case n > math.MaxUint32:
			return c, fmt.Errorf("nodeagent: Config.UserNamespacesIDsPerPod: invalid configuration: userNamespaces.idsPerPod must not be more than %d", int64(math.MaxUint32))
		}
	}
	if c.CgroupDriver != "" && c.CgroupDriver != cgroupmgr.DriverCgroupfs && c.CgroupDriver != cgroupmgr.DriverSystemd {
		return c, fmt.Errorf("nodeagent: Config.CgroupDriver: Unsupported value: %q: want cgroupfs or systemd", c.CgroupDriver)
	}
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&c.RootDir, DefaultRootDir)
	def(&c.PodLogsDir, kuberuntime.DefaultPodLogsDir)
	def(&c.CgroupRoot, DefaultCgroupRoot)
	def(&c.ContainersLogDir, containerlog.DefaultContainersLogDir)
	if c.CgroupDriver == "" {
		c.CgroupDriver = cgroupmgr.DriverCgroupfs
	}
	if c.MaxPods == 0 {
		c.MaxPods = DefaultMaxPods
	}
	if c.LeaseDurationSeconds == 0 {
		c.LeaseDurationSeconds = nodestatus.DefaultLeaseDurationSeconds
	}
	if c.CgroupsPerQOS == nil {
		c.CgroupsPerQOS = ptr.To(true)
	}
	if c.RuntimeOnHost == nil {
		c.RuntimeOnHost = ptr.To(true)
	}
	if c.FailCgroupV1 == nil {
		c.FailCgroupV1 = ptr.To(true)
	}
	if c.EnableDebuggingHandlers == nil {
		c.EnableDebuggingHandlers = ptr.To(true)
	}
	if c.ContainerGC == nil {
		c.ContainerGC = ptr.To(gc.DefaultContainerPolicy())
	}
	if c.ImageGC == nil {
		c.ImageGC = ptr.To(gc.DefaultImagePolicy())
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Log.GetSink() == nil {
		c.Log = logr.Discard()
	}
	return c, nil
}
