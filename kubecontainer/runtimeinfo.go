package kubecontainer

// Image is an image the runtime holds, as the node status lists it.
type Image struct {
	ID          string
	RepoTags    []string
	RepoDigests []string
	Size        uint64
}

// The runtime condition types every CRI runtime reports.
const (
	RuntimeReady = "RuntimeReady"
	NetworkReady = "NetworkReady"
)

// RuntimeCondition is one of the runtime's conditions (CRI Status).
type RuntimeCondition struct {
	Type    string
	Status  bool
	Reason  string
	Message string
}

// String is the kubelet's form, which its node messages quote:
// "NetworkReady=false reason:NetworkPluginNotReady message:...".
func (c *RuntimeCondition) String() string {
	s := "false"
	if c.Status {
		s = "true"
	}
	return c.Type + "=" + s + " reason:" + c.Reason + " message:" + c.Message
}

// RuntimeStatus is the runtime's conditions.
type RuntimeStatus struct {
	Conditions []RuntimeCondition
}

// Condition returns the condition of type t, or nil.
func (s *RuntimeStatus) Condition(t string) *RuntimeCondition {
	if s == nil {
		return nil
	}
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}
