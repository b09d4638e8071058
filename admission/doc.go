// Package admission is the kubelet's predicate admit handler
// (pkg/kubelet/lifecycle/predicate.go): whether a new pod fits the node
// beside the pods already admitted, by the scheduler's rules the kubelet
// runs again (resources, node affinity and selector, node name, host
// ports, NoExecute taints), with the kubelet's reasons ("OutOfcpu",
// "OutOfpods", "NodeAffinity", "NodePorts", "TaintToleration", ...) and
// messages.
//
// The package holds the admit handlers' vocabulary, with the kubelet's
// names: a PodAdmitHandler answers each new pod with a PodAdmitResult, a
// refusal's Reason and Message; PodAdmitHandlerFunc adapts a function.
// Predicate, Sysctls (the kubelet's sysctl allowlist) and eviction's
// Manager are PodAdmitHandlers, which podsync's Dispatcher asks in order:
//
//	pred, _ := admission.New(admission.Config{Node: func() (*v1.Node, error) { return node, nil },
//		Pods: workers})
//	d, _ := podsync.NewDispatcher(podsync.DispatchConfig{Workers: workers, Prober: prober,
//		Statuses: statuses, Admit: []admission.PodAdmitHandler{evictionMgr, sysctls, pred}})
//
// The node's allocatable "pods" is --max-pods: a pod over it is refused
// here as OutOfpods, as the kubelet does.
package admission
