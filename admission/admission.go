package admission

import (
	"errors"
	"fmt"
	goruntime "runtime"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// The kubelet's admission reasons (pkg/kubelet/lifecycle/predicate.go)
// and the scheduler plugins' names its predicate failures carry.
const (
	ReasonInvalidNodeInfo           = "InvalidNodeInfo"
	ReasonPodOSSelectorDoesNotMatch = "PodOSSelectorNodeLabelDoesNotMatch"
	ReasonPodOSNotSupported         = "PodOSNotSupported"
	// ReasonOutOfPrefix starts a resource's reason: "OutOfcpu",
	// "OutOfmemory", "OutOfpods", "OutOfhugepages-2Mi", "OutOfexample.com/gpu".
	ReasonOutOfPrefix    = "OutOf"
	ReasonOutOfPods      = "OutOfpods"
	ReasonNodeAffinity   = "NodeAffinity"
	ReasonNodeName       = "NodeName"
	ReasonNodePorts      = "NodePorts"
	ReasonTaint          = "TaintToleration"
	errNodeAffinity      = "node(s) didn't match Pod's node affinity/selector"
	errNodeName          = "node(s) didn't match the requested node name"
	errNodePorts         = "node(s) didn't have free ports for the requested pod ports"
	errTaintNotTolerated = "node(s) had taints that the pod didn't tolerate"
)

// NodeFunc returns the node the pods run on: its name, labels, taints and
// allocatable are what admission reads (the kubelet's getNodeAnyWay).
type NodeFunc func() (*v1.Node, error)

// ActivePods lists the pods admitted and not yet terminated, whose
// requests and host ports a new pod must fit beside;
// *podworkers.Workers implements it.
type ActivePods interface {
	ActivePods() []*v1.Pod
}

// Config configures a Predicate.
type Config struct {
	Node NodeFunc
	Pods ActivePods
	Log  logr.Logger
}

// Predicate is the kubelet's predicate admit handler: a new pod is
// refused when its OS does not match the node's, when it does not fit the
// node's allocatable beside the active pods (pods, cpu, memory,
// ephemeral-storage, hugepages and extended resources), when its required
// node affinity or node selector do not match the node, when it names
// another node, when a host port it asks for is taken, or when the node
// has a NoExecute taint it does not tolerate (static pods excepted).
//
// Only the first failure is reported, as the kubelet does. Unlike the
// kubelet, a critical pod that does not fit does not preempt other pods.
type Predicate struct{ cfg Config }

// New checks cfg.
func New(cfg Config) (*Predicate, error) {
	if cfg.Node == nil || cfg.Pods == nil {
		return nil, errors.New("admission: Config: Node and Pods are required")
	}
	return &Predicate{cfg: cfg}, nil
}

// Admit decides about a new pod: a Predicate is a PodAdmitHandler.
func (p *Predicate) Admit(pod *v1.Pod) PodAdmitResult {
	node, err := p.cfg.Node()
	if err != nil || node == nil {
		p.cfg.Log.Error(err, "cannot get the node for admission")
		return PodAdmitResult{Reason: ReasonInvalidNodeInfo, Message: "Kubelet cannot get node info."}
	}
	// The checks preemption would not help come first.
	if osSelectorMismatch(pod, node) {
		return PodAdmitResult{Reason: ReasonPodOSSelectorDoesNotMatch, Message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"}
	}
	if pod.Spec.OS != nil && string(pod.Spec.OS.Name) != goruntime.GOOS {
		return PodAdmitResult{Reason: ReasonPodOSNotSupported, Message: "Failed to admit pod as the OS field doesn't match node OS"}
	}
	others := p.cfg.Pods.ActivePods()
	if short := fits(withoutMissingExtended(pod, node.Status.Allocatable), others, node.Status.Allocatable); len(short) > 0 {
		r := short[0]
		return PodAdmitResult{Reason: ReasonOutOfPrefix + string(r.Name), Message: r.message()}
	}
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !ok {
		return PodAdmitResult{Reason: ReasonNodeAffinity, Message: predicateMessage(ReasonNodeAffinity, errNodeAffinity)}
	}
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != node.Name {
		return PodAdmitResult{Reason: ReasonNodeName, Message: predicateMessage(ReasonNodeName, errNodeName)}
	}
	if portsConflict(hostPorts(pod), usedPorts(others)) {
		return PodAdmitResult{Reason: ReasonNodePorts, Message: predicateMessage(ReasonNodePorts, errNodePorts)}
	}
	if !isStatic(pod) {
		noExecute := func(t *v1.Taint) bool { return t.Effect == v1.TaintEffectNoExecute }
		if _, untolerated := corev1.FindMatchingUntoleratedTaint(p.cfg.Log, node.Spec.Taints, pod.Spec.Tolerations, noExecute,
			false); untolerated {
			return PodAdmitResult{Reason: ReasonTaint, Message: predicateMessage(ReasonTaint, errTaintNotTolerated)}
		}
	}
	return PodAdmitResult{Admit: true}
}

// FitResize says whether pod, with the resources its spec asks (a resize),
// fits the node's allocatable beside others (the other active pods, with
// their allocated resources): the resource part of the kubelet's
// predicate, asked again for a resize (allocation.FitFunc). Its reason and
// message are Admit's; the kubelet's allocation manager turns them into a
// Deferred resize.
func (p *Predicate) FitResize(pod *v1.Pod, others []*v1.Pod) (fit bool, reason, message string) {
	node, err := p.cfg.Node()
	if err != nil || node == nil {
		p.cfg.Log.Error(err, "cannot get the node for admission")
		return false, ReasonInvalidNodeInfo, "Kubelet cannot get node info."
	}
	if short := fits(withoutMissingExtended(pod, node.Status.Allocatable), others, node.Status.Allocatable); len(short) > 0 {
		return false, ReasonOutOfPrefix + string(short[0].Name), short[0].message()
	}
	return true, "", ""
}

// predicateMessage is the kubelet's PredicateFailureError text.
func predicateMessage(name, desc string) string {
	return fmt.Sprintf("Predicate %s failed: %s", name, desc)
}

// osSelectorMismatch is the kubelet's rejectPodAdmissionBasedOnOSSelector:
// a pod labelled kubernetes.io/os must name the node's OS (the node's
// label, or the agent's GOOS when the label is missing or wrong).
func osSelectorMismatch(pod *v1.Pod, node *v1.Node) bool {
	want, ok := pod.Labels[v1.LabelOSStable]
	if !ok {
		return false
	}
	have := node.Labels[v1.LabelOSStable]
	if have != goruntime.GOOS {
		have = goruntime.GOOS
	}
	return want != have
}

// isStatic is the kubelet's IsStaticPod: its config.source annotation is
// set and is not "api".
func isStatic(pod *v1.Pod) bool {
	src, ok := pod.Annotations["kubernetes.io/config.source"]
	return ok && src != "api"
}
