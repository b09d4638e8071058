package admission

import v1 "k8s.io/api/core/v1"

// Result is an admit handler's decision about a new pod; a refusal has a
// one-word Reason ("OutOfcpu", "Evicted", "SysctlForbidden") and a
// Message, which the refused pod's status and event carry.
type Result struct {
	Admit   bool
	Reason  string
	Message string
}

// Handler is one of the kubelet's admit handlers (its PodAdmitHandler),
// asked about each new pod before it runs: *Predicate, *Sysctls and
// eviction's *Manager are three.
type Handler interface {
	Admit(pod *v1.Pod) Result
}

// HandlerFunc adapts a function to a Handler.
type HandlerFunc func(pod *v1.Pod) Result

// Admit calls f.
func (f HandlerFunc) Admit(pod *v1.Pod) Result { return f(pod) }
