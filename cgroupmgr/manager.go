package cgroupmgr

import (
	"errors"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit-dev/nodekit/podpath"
	"github.com/nodekit-dev/nodekit/resources"
)

// Names of the node-level and QoS cgroups.
const (
	KubepodsName   = "kubepods"
	BurstableName  = "burstable"
	BestEffortName = "besteffort"
	podPrefix      = "pod"
)

// Manager keeps the node -> QoS -> pod cgroup tree. It holds no goroutines
// and no caches: every call reads or writes the hierarchy. Calls are not
// serialised; use one goroutine (the kubelet's pod workers sync per pod).
type Manager struct {
	cfg  Config
	root CgroupName
	fs   fsDriver
}

// New detects the cgroup mode and returns a Manager. It creates nothing.
func New(cfg Config) (*Manager, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	root, err := parseCgroupRoot(cfg.Driver, cfg.CgroupRoot)
	if err != nil {
		return nil, err
	}
	m := &Manager{cfg: cfg, root: root}
	if cfg.Mode == ModeV2 {
		m.fs = &v2Driver{root: cfg.MountRoot, formula: cfg.WeightFormula}
	} else {
		d, err := newV1Driver(cfg.MountRoot)
		if err != nil {
			return nil, err
		}
		m.fs = d
	}
	return m, nil
}

// Mode is the detected (or configured) cgroup mode.
func (m *Manager) Mode() Mode { return m.cfg.Mode }

// KubepodsCgroupName is <CgroupRoot>/kubepods.
func (m *Manager) KubepodsCgroupName() CgroupName {
	return append(append(CgroupName{}, m.root...), KubepodsName)
}

// QOSCgroupName is kubepods for Guaranteed, kubepods/burstable and kubepods/besteffort.
func (m *Manager) QOSCgroupName(qos v1.PodQOSClass) CgroupName {
	n := m.KubepodsCgroupName()
	switch qos {
	case v1.PodQOSBurstable:
		return append(n, BurstableName)
	case v1.PodQOSBestEffort:
		return append(n, BestEffortName)
	}
	return n
}

// PodCgroupName is <QoS cgroup>/pod<uid>.
func (m *Manager) PodCgroupName(pod *v1.Pod) (CgroupName, error) {
	if pod == nil {
		return nil, errors.New("cgroupmgr: pod is nil")
	}
	if msgs := podpath.ValidateUID(string(pod.UID)); len(msgs) > 0 {
		return nil, fieldError("pod.metadata.uid", podpath.Quote(string(pod.UID)), msgs[0])
	}
	return append(m.QOSCgroupName(resources.PodQOSClass(pod)), podPrefix+string(pod.UID)), nil
}

// Path is the name in the configured driver's form (relative to the mount root).
func (m *Manager) Path(name CgroupName) string { return m.cfg.Driver.Path(name) }

// Exists reports whether the cgroup exists in any managed controller.
func (m *Manager) Exists(name CgroupName) bool { return m.fs.exists(m.Path(name)) }

// Pids lists the processes in the cgroup and its descendants.
func (m *Manager) Pids(name CgroupName) ([]int, error) { return m.fs.pids(m.Path(name)) }

// Usage reads memory, working set, CPU and pids usage of a cgroup.
func (m *Manager) Usage(name CgroupName) (*Usage, error) { return m.fs.usage(m.Path(name)) }

// ensure creates the cgroup with rc, or updates it when it exists.
func (m *Manager) ensure(name CgroupName, rc *ResourceConfig) error {
	if err := name.Validate(); err != nil {
		return err
	}
	p := m.Path(name)
	if m.fs.exists(p) {
		return m.fs.update(p, rc)
	}
	return m.fs.create(p, rc)
}

// Destroy removes a cgroup and its (empty) descendants, deepest first; it
// returns *BusyError listing the PIDs if processes remain, and removes nothing.
// A missing cgroup is not an error.
func (m *Manager) Destroy(name CgroupName) error {
	if err := name.Validate(); err != nil {
		return err
	}
	p := m.Path(name)
	pids, err := m.fs.pids(p)
	if err != nil {
		return err
	}
	if len(pids) > 0 {
		return &BusyError{Path: p, PIDs: pids}
	}
	return m.destroyTree(p)
}

func (m *Manager) destroyTree(p string) error {
	kids, err := m.fs.children(p)
	if err != nil {
		return err
	}
	for _, k := range kids {
		if err := m.destroyTree(strings.TrimSuffix(p, "/") + "/" + k); err != nil {
			return err
		}
	}
	return m.fs.destroy(p)
}

func (m *Manager) cpuPeriod() uint64 { return uint64(m.cfg.CPUCFSQuotaPeriod.Microseconds()) }

func (m *Manager) podOptions() PodOptions {
	return PodOptions{
		DisableCPUQuota: m.cfg.DisableCPUQuota,
		CPUPeriod:       m.cpuPeriod(),
		MemoryQoS:       m.cfg.MemoryQoS && m.cfg.Mode == ModeV2,
	}
}

// PodResourceConfig is ResourceConfigForPod with this Manager's options and PodPidsLimit.
func (m *Manager) PodResourceConfig(pod *v1.Pod) (*ResourceConfig, error) {
	rc, err := ResourceConfigForPod(pod, m.podOptions())
	if err != nil {
		return nil, err
	}
	pids := m.cfg.PodPidsLimit
	rc.PidsLimit = &pids
	return rc, nil
}

// EnsurePodCgroup creates or updates the pod's cgroup under its QoS cgroup.
func (m *Manager) EnsurePodCgroup(pod *v1.Pod) (CgroupName, error) {
	name, err := m.PodCgroupName(pod)
	if err != nil {
		return nil, err
	}
	rc, err := m.PodResourceConfig(pod)
	if err != nil {
		return nil, err
	}
	return name, m.ensure(name, rc)
}

// DestroyPodCgroup removes the pod's cgroup; *BusyError if processes remain.
func (m *Manager) DestroyPodCgroup(pod *v1.Pod) error {
	name, err := m.PodCgroupName(pod)
	if err != nil {
		return err
	}
	return m.Destroy(name)
}

// PodUsage reads the usage of the pod's cgroup.
func (m *Manager) PodUsage(pod *v1.Pod) (*Usage, error) {
	name, err := m.PodCgroupName(pod)
	if err != nil {
		return nil, err
	}
	return m.Usage(name)
}

// podUIDFromCgroup returns the UID of a pod cgroup directory name in either
// driver form, or "" if it is not a pod cgroup.
func (m *Manager) podUIDFromCgroup(dir string) types.UID {
	name := m.cfg.Driver.Parse("/" + dir)
	if len(name) == 0 {
		return ""
	}
	last := name[len(name)-1]
	if !strings.HasPrefix(last, podPrefix) || len(last) == len(podPrefix) {
		return ""
	}
	return types.UID(strings.TrimPrefix(last, podPrefix))
}
