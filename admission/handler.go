package admission

import v1 "k8s.io/api/core/v1"

// PodAdmitResult is an admit handler's decision about a new pod (the
// kubelet's PodAdmitResult); a refusal has a one-word Reason ("OutOfcpu",
// "Evicted", "SysctlForbidden") and a Message, which the refused pod's
// status and event carry.
type PodAdmitResult struct {
	Admit   bool
	Reason  string
	Message string
}

// PodAdmitHandler is one of the kubelet's admit handlers (its
// PodAdmitHandler), asked about each new pod before it runs: *Predicate,
// *Sysctls and eviction's *Manager are three.
type PodAdmitHandler interface {
	Admit(pod *v1.Pod) PodAdmitResult
}

// PodAdmitHandlerFunc adapts a function to a PodAdmitHandler.
type PodAdmitHandlerFunc func(pod *v1.Pod) PodAdmitResult

// Admit calls f.
func (f PodAdmitHandlerFunc) Admit(pod *v1.Pod) PodAdmitResult { return f(pod) }
