package admission_test

import (
	"errors"
	goruntime "runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit-dev/nodekit/admission"
)

type pods []*v1.Pod

func (p pods) ActivePods() []*v1.Pod { return p }

func list(kv ...string) v1.ResourceList {
	l := v1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func node() *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"disk": "ssd", v1.LabelOSStable: goruntime.GOOS}},
		Status: v1.NodeStatus{Allocatable: list("cpu", "2", "memory", "4Gi", "ephemeral-storage", "10Gi", "pods", "3",
			"hugepages-2Mi", "8Mi", "example.com/gpu", "2")}}
}

// requesting is a pod whose one container requests kv.
func requesting(name string, kv ...string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: list(kv...)}}}}}
}

func withPort(p *v1.Pod, port v1.ContainerPort) *v1.Pod {
	p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, port)
	return p
}

func TestAdmit(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	for _, tc := range []struct {
		name            string
		node            func(*v1.Node)
		others          pods
		pod             func() *v1.Pod
		reason, message string
	}{
		{name: "kubelet predicate: a pod that fits is admitted",
			others: pods{requesting("a", "cpu", "1", "memory", "1Gi")},
			pod:    func() *v1.Pod { return requesting("p", "cpu", "1", "memory", "1Gi") }},
		{name: "kubelet Fits: OutOfpods when the allocatable pods are taken (--max-pods)",
			others: pods{requesting("a"), requesting("b"), requesting("c")},
			pod:    func() *v1.Pod { return requesting("p") }, reason: "OutOfpods",
			message: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"},
		{name: "kubelet Fits: OutOfcpu in millicores against allocatable less the active pods' requests",
			others: pods{requesting("a", "cpu", "1800m")},
			pod:    func() *v1.Pod { return requesting("p", "cpu", "500m") }, reason: "OutOfcpu",
			message: "Node didn't have enough resource: cpu, requested: 500, used: 1800, capacity: 2000"},
		{name: "kubelet Fits: OutOfmemory in bytes",
			others: pods{requesting("a", "memory", "3Gi")},
			pod:    func() *v1.Pod { return requesting("p", "memory", "2Gi") }, reason: "OutOfmemory",
			message: "Node didn't have enough resource: memory, requested: 2147483648, used: 3221225472, capacity: 4294967296"},
		{name: "kubelet Fits: OutOfephemeral-storage",
			pod: func() *v1.Pod { return requesting("p", "ephemeral-storage", "11Gi") }, reason: "OutOfephemeral-storage",
			message: "Node didn't have enough resource: ephemeral-storage, requested: 11811160064, used: 0, capacity: 10737418240"},
		{name: "kubelet Fits: hugepages are scalar resources",
			others: pods{requesting("a", "hugepages-2Mi", "4Mi")},
			pod:    func() *v1.Pod { return requesting("p", "hugepages-2Mi", "6Mi") }, reason: "OutOfhugepages-2Mi",
			message: "Node didn't have enough resource: hugepages-2Mi, requested: 6291456, used: 4194304, capacity: 8388608"},
		{name: "kubelet Fits: extended resources the node has",
			others: pods{requesting("a", "example.com/gpu", "1")},
			pod:    func() *v1.Pod { return requesting("p", "example.com/gpu", "2") }, reason: "OutOfexample.com/gpu",
			message: "Node didn't have enough resource: example.com/gpu, requested: 2, used: 1, capacity: 2"},
		{name: "kubelet removeMissingExtendedResources: an extended resource the node lacks is ignored",
			pod: func() *v1.Pod { return requesting("p", "other.io/fpga", "1") }},
		{name: "kubelet Fits: the first failure is reported, pods before cpu",
			others: pods{requesting("a", "cpu", "2"), requesting("b"), requesting("c")},
			pod:    func() *v1.Pod { return requesting("p", "cpu", "1") }, reason: "OutOfpods",
			message: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"},
		{name: "kubelet PodRequests: the largest init container raises the request",
			pod: func() *v1.Pod {
				p := requesting("p", "cpu", "500m")
				p.Spec.InitContainers = []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Requests: list("cpu", "2500m")}}}
				return p
			}, reason: "OutOfcpu", message: "Node didn't have enough resource: cpu, requested: 2500, used: 0, capacity: 2000"},
		{name: "kubelet PodRequests: a sidecar adds to the containers and the overhead is added",
			others: pods{func() *v1.Pod {
				p := requesting("a", "cpu", "500m")
				p.Spec.InitContainers = []v1.Container{{Name: "sidecar", RestartPolicy: &always,
					Resources: v1.ResourceRequirements{Requests: list("cpu", "500m")}}}
				p.Spec.Overhead = list("cpu", "100m")
				return p
			}()},
			pod: func() *v1.Pod { return requesting("p", "cpu", "1") }, reason: "OutOfcpu",
			message: "Node didn't have enough resource: cpu, requested: 1000, used: 1100, capacity: 2000"},
		{name: "kubelet PodRequests: pod-level requests replace the containers'",
			pod: func() *v1.Pod {
				p := requesting("p", "cpu", "100m")
				p.Spec.Resources = &v1.ResourceRequirements{Requests: list("cpu", "3")}
				return p
			}, reason: "OutOfcpu", message: "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000"},
		{name: "kubelet AdmissionCheck: the node selector must match (NodeAffinity)",
			pod: func() *v1.Pod {
				p := requesting("p")
				p.Spec.NodeSelector = map[string]string{"disk": "hdd"}
				return p
			}, reason: "NodeAffinity", message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		{name: "kubelet AdmissionCheck: required node affinity must match",
			pod: func() *v1.Pod {
				p := requesting("p")
				p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
					NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{
						{Key: "disk", Operator: v1.NodeSelectorOpIn, Values: []string{"nvme"}}}}}}}}
				return p
			}, reason: "NodeAffinity", message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		{name: "kubelet AdmissionCheck: matching node affinity is admitted",
			pod: func() *v1.Pod {
				p := requesting("p")
				p.Spec.NodeSelector = map[string]string{"disk": "ssd"}
				return p
			}},
		{name: "kubelet AdmissionCheck: a pod bound to another node (NodeName)",
			pod: func() *v1.Pod {
				p := requesting("p")
				p.Spec.NodeName = "node-2"
				return p
			}, reason: "NodeName", message: "Predicate NodeName failed: node(s) didn't match the requested node name"},
		{name: "kubelet AdmissionCheck: a host port in use on all addresses (NodePorts)",
			others: pods{withPort(requesting("a"), v1.ContainerPort{HostPort: 8080, ContainerPort: 80})},
			pod: func() *v1.Pod {
				return withPort(requesting("p"), v1.ContainerPort{HostPort: 8080, ContainerPort: 80, HostIP: "127.0.0.1", Protocol: v1.ProtocolTCP})
			},
			reason: "NodePorts", message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
		{name: "kubelet HostPortInfo: another protocol or another host IP does not conflict",
			others: pods{withPort(requesting("a"), v1.ContainerPort{HostPort: 8080, HostIP: "127.0.0.1"})},
			pod: func() *v1.Pod {
				p := withPort(requesting("p"), v1.ContainerPort{HostPort: 8080, Protocol: v1.ProtocolUDP})
				return withPort(p, v1.ContainerPort{HostPort: 8080, HostIP: "127.0.0.2"})
			}},
		{name: "kubelet GetHostPorts: a sidecar's host port is in use",
			others: pods{func() *v1.Pod {
				p := requesting("a")
				p.Spec.InitContainers = []v1.Container{{Name: "sidecar", RestartPolicy: &always, Ports: []v1.ContainerPort{{HostPort: 9000}}}}
				return p
			}()},
			pod:    func() *v1.Pod { return withPort(requesting("p"), v1.ContainerPort{HostPort: 9000}) },
			reason: "NodePorts", message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
		{name: "kubelet generalFilter: an untolerated NoExecute taint (TaintToleration)",
			node: func(n *v1.Node) {
				n.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoExecute}}
			},
			pod: func() *v1.Pod { return requesting("p") }, reason: "TaintToleration",
			message: "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"},
		{name: "kubelet generalFilter: only NoExecute taints count",
			node: func(n *v1.Node) {
				n.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoSchedule}}
			},
			pod: func() *v1.Pod { return requesting("p") }},
		{name: "kubelet generalFilter: a tolerated NoExecute taint",
			node: func(n *v1.Node) {
				n.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoExecute}}
			},
			pod: func() *v1.Pod {
				p := requesting("p")
				p.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "db", Effect: v1.TaintEffectNoExecute}}
				return p
			}},
		{name: "kubelet generalFilter: static pods skip the taint check",
			node: func(n *v1.Node) {
				n.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoExecute}}
			},
			pod: func() *v1.Pod {
				p := requesting("p")
				p.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
				return p
			}},
		{name: "kubelet rejectPodAdmissionBasedOnOSSelector: a kubernetes.io/os label for another OS",
			pod: func() *v1.Pod {
				p := requesting("p")
				p.Labels = map[string]string{v1.LabelOSStable: "windows"}
				return p
			}, reason: "PodOSSelectorNodeLabelDoesNotMatch",
			message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"},
		{name: "kubelet rejectPodAdmissionBasedOnOSField: spec.os for another OS",
			pod: func() *v1.Pod {
				p := requesting("p")
				p.Spec.OS = &v1.PodOS{Name: "windows"}
				return p
			}, reason: "PodOSNotSupported", message: "Failed to admit pod as the OS field doesn't match node OS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := node()
			if tc.node != nil {
				tc.node(n)
			}
			p, err := admission.New(admission.Config{Node: func() (*v1.Node, error) { return n, nil }, Pods: tc.others})
			require.NoError(t, err)
			assert.Equal(t, admission.PodAdmitResult{Admit: tc.reason == "", Reason: tc.reason, Message: tc.message}, p.Admit(tc.pod()))
		})
	}
}

func TestAdmitWithoutNode(t *testing.T) {
	p, err := admission.New(admission.Config{Node: func() (*v1.Node, error) { return nil, errors.New("not yet") }, Pods: pods{}})
	require.NoError(t, err)
	assert.Equal(t, admission.PodAdmitResult{Reason: "InvalidNodeInfo", Message: "Kubelet cannot get node info."}, p.Admit(requesting("p")),
		"kubelet predicateAdmitHandler: getNodeAnyWay failed")
}

func TestNewRequiresNodeAndPods(t *testing.T) {
	_, err := admission.New(admission.Config{})
	require.Error(t, err)
}
