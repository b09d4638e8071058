package nodestatus

import (
	"context"
	"fmt"
	goruntime "runtime"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/resources"
)

// Builder computes a Node object and its status as the kubelet does. It is
// pure apart from the Checks, Pressure and Images it calls: Registrar and
// Reporter do the API calls.
type Builder struct {
	cfg         Config
	capacity    v1.ResourceList
	allocatable v1.ResourceList
}

// New validates cfg and computes capacity and allocatable once: they come
// from the machine and the flags, which do not change while the agent runs.
func New(cfg Config) (*Builder, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	n := &Builder{cfg: cfg, capacity: capacity(cfg)}
	alloc, err := resources.NodeAllocatable(resources.AllocatableConfig{Capacity: n.capacity,
		KubeReserved: cfg.KubeReserved, SystemReserved: cfg.SystemReserved, HardEvictionThresholds: cfg.HardEviction})
	if err != nil {
		return nil, fmt.Errorf("nodestatus: allocatable: %w", err)
	}
	// Pages reserved for hugepages are not memory pods can have.
	if mem, ok := alloc[v1.ResourceMemory]; ok {
		for name, q := range n.capacity {
			if strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix) {
				mem.Sub(q)
			}
		}
		if mem.Sign() < 0 {
			mem = *resource.NewQuantity(0, resource.BinarySI)
		}
		alloc[v1.ResourceMemory] = mem
	}
	n.allocatable = alloc
	return n, nil
}

func capacity(cfg Config) v1.ResourceList {
	m := cfg.Machine
	c := v1.ResourceList{
		v1.ResourceCPU:              *resource.NewQuantity(int64(m.NumCPU), resource.DecimalSI),
		v1.ResourceMemory:           *resource.NewQuantity(m.MemoryCapacity, resource.BinarySI),
		v1.ResourcePods:             *resource.NewQuantity(int64(cfg.MaxPods), resource.DecimalSI),
		v1.ResourceEphemeralStorage: *resource.NewQuantity(m.RootfsCapacity, resource.BinarySI),
	}
	for size, pages := range m.Hugepages {
		name := v1.ResourceName(v1.ResourceHugePagesPrefix + resource.NewQuantity(size, resource.BinarySI).String())
		c[name] = *resource.NewQuantity(size*pages, resource.BinarySI)
	}
	return c
}

// Name is the node's name.
func (n *Builder) Name() string { return n.cfg.NodeName }

// Allocatable is what pods may have of the node (capacity less the
// reservations and the hard eviction threshold); the downward API reports
// it for a limit a container does not set.
func (n *Builder) Allocatable() v1.ResourceList { return n.allocatable.DeepCopy() }

// ForAdmission is the Node as admission reads it: the name, labels and
// taints Initial registers, with the capacity and allocatable, and no
// other status (no checks, no CRI calls), so it is cheap to ask for each
// new pod. It is the kubelet's initialNode, which its getNodeAnyWay
// returns until the API's Node is known.
func (n *Builder) ForAdmission() *v1.Node {
	labels := n.cfg.defaultLabels()
	for k, v := range n.cfg.Labels {
		labels[k] = v
	}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.cfg.NodeName, Labels: labels},
		Spec:   v1.NodeSpec{Taints: append([]v1.Taint(nil), n.cfg.Taints...)},
		Status: v1.NodeStatus{Capacity: n.capacity.DeepCopy(), Allocatable: n.allocatable.DeepCopy()}}
	n.setAttachAnnotation(node)
	return node
}

// Initial is the Node to register: the kubelet's labels and the caller's,
// the taints, the controller-managed attach-detach annotation, and a
// first status.
func (n *Builder) Initial(ctx context.Context) *v1.Node {
	node := n.ForAdmission()
	n.setStatus(ctx, node, false) // its events go out once it is registered
	return node
}

// SetStatus sets node.Status as the kubelet's setters do, in their order:
// addresses, capacity and allocatable, node info, daemon endpoints,
// images, then the conditions, whose LastTransitionTime changes only when
// their status does.
func (n *Builder) SetStatus(ctx context.Context, node *v1.Node) { n.setStatus(ctx, node, true) }

func (n *Builder) setStatus(ctx context.Context, node *v1.Node, record bool) {
	s := &node.Status
	s.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: n.cfg.NodeIP}, {Type: v1.NodeHostName, Address: n.cfg.Hostname}}
	s.Capacity, s.Allocatable = n.capacity.DeepCopy(), n.allocatable.DeepCopy()
	m := n.cfg.Machine
	s.NodeInfo = v1.NodeSystemInfo{MachineID: m.MachineID, SystemUUID: m.SystemUUID, BootID: m.BootID,
		KernelVersion: m.KernelVersion, OSImage: m.OSImage, ContainerRuntimeVersion: n.cfg.ContainerRuntimeVersion,
		KubeletVersion: n.cfg.KubeletVersion, OperatingSystem: goruntime.GOOS, Architecture: goruntime.GOARCH}
	s.DaemonEndpoints = v1.NodeDaemonEndpoints{KubeletEndpoint: v1.DaemonEndpoint{Port: n.cfg.Port}}
	if n.cfg.VolumesInUse != nil {
		s.VolumesInUse = n.cfg.VolumesInUse()
	}
	if n.cfg.Images != nil {
		if imgs, err := n.cfg.Images.Images(ctx); err == nil {
			s.Images = nodeImages(imgs)
		} // else keep the last list, as the kubelet does
	}
	now := metav1.NewTime(n.cfg.Clock.Now())
	p := n.cfg.Pressure
	for _, c := range []v1.NodeCondition{
		pressure(v1.NodeMemoryPressure, p != nil && p.MemoryPressure()),
		pressure(v1.NodeDiskPressure, p != nil && p.DiskPressure()),
		pressure(v1.NodePIDPressure, p != nil && p.PIDPressure()),
		n.ready(ctx, s),
	} {
		if setCondition(s, now, c) && record {
			n.event(c)
		}
	}
}

// event records the kubelet's event for a condition that changed:
// NodeReady/NodeNotReady, NodeHasSufficientMemory, NodeHasDiskPressure...
func (n *Builder) event(c v1.NodeCondition) {
	if n.cfg.Recorder == nil {
		return
	}
	reason := "Node" + strings.TrimPrefix(c.Reason, "Kubelet")
	if c.Type == v1.NodeReady {
		reason = "NodeReady"
		if c.Status != v1.ConditionTrue {
			reason = "NodeNotReady"
		}
	}
	// The kubelet refers to its Node with the node's name as UID.
	ref := &v1.ObjectReference{Kind: "Node", Name: n.cfg.NodeName, UID: types.UID(n.cfg.NodeName)}
	n.cfg.Recorder.Eventf(ref, v1.EventTypeNormal, reason, "Node %s status is now: %s", n.cfg.NodeName, reason)
}

// readyNow says whether the node would report Ready now.
func (n *Builder) readyNow(ctx context.Context) bool {
	return n.ready(ctx, &v1.NodeStatus{Capacity: n.capacity}).Status == v1.ConditionTrue
}

// ready is the kubelet's Ready condition: every check's error, and any
// capacity the node cannot report, joined into the message.
func (n *Builder) ready(ctx context.Context, s *v1.NodeStatus) v1.NodeCondition {
	var errs []error
	for _, check := range n.cfg.ReadyChecks {
		if err := check(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	var missing []string
	for _, r := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourcePods} {
		if q, ok := s.Capacity[r]; !ok || q.IsZero() {
			missing = append(missing, string(r))
		}
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("missing node capacity for resources: %s", strings.Join(missing, ", ")))
	}
	if err := utilerrors.NewAggregate(errs); err != nil {
		return v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: "KubeletNotReady", Message: err.Error()}
	}
	return v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"}
}

// The kubelet's reasons and messages for the pressure conditions.
var pressureText = map[v1.NodeConditionType][2][2]string{ // [pressure?][reason, message]
	v1.NodeMemoryPressure: {{"KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
		{"KubeletHasInsufficientMemory", "kubelet has insufficient memory available"}},
	v1.NodeDiskPressure: {{"KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
		{"KubeletHasDiskPressure", "kubelet has disk pressure"}},
	v1.NodePIDPressure: {{"KubeletHasSufficientPID", "kubelet has sufficient PID available"},
		{"KubeletHasInsufficientPID", "kubelet has insufficient PID available"}},
}

func pressure(t v1.NodeConditionType, under bool) v1.NodeCondition {
	i, status := 0, v1.ConditionFalse
	if under {
		i, status = 1, v1.ConditionTrue
	}
	return v1.NodeCondition{Type: t, Status: status, Reason: pressureText[t][i][0], Message: pressureText[t][i][1]}
}

// setCondition replaces or appends c, stamping the heartbeat, and the
// transition when the status changed or the condition is new; it reports
// whether it did.
func setCondition(s *v1.NodeStatus, now metav1.Time, c v1.NodeCondition) bool {
	c.LastHeartbeatTime, c.LastTransitionTime = now, now
	for i := range s.Conditions {
		if s.Conditions[i].Type == c.Type {
			same := s.Conditions[i].Status == c.Status
			if same {
				c.LastTransitionTime = s.Conditions[i].LastTransitionTime
			}
			s.Conditions[i] = c
			return !same
		}
	}
	s.Conditions = append(s.Conditions, c)
	return true
}

// nodeImages is status.images: the largest MaxImages images, each with up
// to MaxNamesPerImage names, digests first.
func nodeImages(imgs []kc.Image) []v1.ContainerImage {
	sorted := append([]kc.Image(nil), imgs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Size > sorted[j].Size })
	var out []v1.ContainerImage
	for _, img := range sorted {
		names := append(append([]string(nil), img.RepoDigests...), img.RepoTags...)
		if len(names) == 0 {
			continue // nothing to call it by
		}
		if len(names) > MaxNamesPerImage {
			names = names[:MaxNamesPerImage]
		}
		out = append(out, v1.ContainerImage{Names: names, SizeBytes: int64(img.Size)})
		if len(out) == MaxImages {
			break
		}
	}
	return out
}

// setAttachAnnotation is the kubelet's: the annotation "true" with
// ControllerManagedAttachDetach, absent without. It reports a change.
func (n *Builder) setAttachAnnotation(node *v1.Node) bool {
	v, had := node.Annotations[AnnotationControllerManagedAttach]
	if !*n.cfg.ControllerManagedAttachDetach {
		delete(node.Annotations, AnnotationControllerManagedAttach)
		return had
	}
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[AnnotationControllerManagedAttach] = "true"
	return !had || v != "true"
}
