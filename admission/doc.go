// Package admission is the kubelet's predicate admit handler
// (pkg/kubelet/lifecycle/predicate.go): whether a new pod fits the node
// beside the pods already admitted, by the scheduler's rules the kubelet
// runs again (resources, node affinity and selector, node name, host
// ports, NoExecute taints), with the kubelet's reasons ("OutOfcpu",
// "OutOfpods", "NodeAffinity", "NodePorts", "TaintToleration", ...) and
// messages. Its Admit is a podsync.PodAdmitFunc:
//
//	pred, _ := admission.New(admission.Config{Node: func() (*v1.Node, error) { return node, nil },
//		Pods: workers})
//	d, _ := podsync.NewDispatcher(podsync.DispatchConfig{Workers: workers, Prober: prober,
//		Statuses: statuses, Admit: []podsync.PodAdmitFunc{evictionMgr.AdmitPod, pred.Admit}})
//
// The node's allocatable "pods" is --max-pods: a pod over it is refused
// here as OutOfpods, as the kubelet does.
package admission
