package podstatus

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Summarize lists each container's state in one line for logs, init
// containers first, e.g. "init=exited:0(0) web=running,ready(2)".
func Summarize(s v1.PodStatus) string {
	var parts []string
	for _, c := range append(append([]v1.ContainerStatus{}, s.InitContainerStatuses...), s.ContainerStatuses...) {
		state := "waiting"
		switch {
		case c.State.Running != nil:
			state = "running"
			if c.Ready {
				state += ",ready"
			}
		case c.State.Terminated != nil:
			state = fmt.Sprintf("exited:%d", c.State.Terminated.ExitCode)
		case c.State.Waiting != nil && c.State.Waiting.Reason != "":
			state = c.State.Waiting.Reason
		}
		parts = append(parts, fmt.Sprintf("%s=%s(%d)", c.Name, state, c.RestartCount))
	}
	return strings.Join(parts, " ")
}
