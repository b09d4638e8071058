package cgroupmgr

import (
	"fmt"
	"strings"
)

// BusyError reports a cgroup that still holds processes and so was neither
// removed nor forgotten. Retry once the processes have exited.
type BusyError struct {
	// Path is the cgroup's path inside the hierarchy (driver form).
	Path string
	// PIDs are the processes found in it or its descendants.
	PIDs []int
}

func (e *BusyError) Error() string {
	pids := make([]string, len(e.PIDs))
	for i, p := range e.PIDs {
		pids[i] = fmt.Sprint(p)
	}
	return fmt.Sprintf("cgroupmgr: cgroup %q not removed: still has processes [%s]", e.Path, strings.Join(pids, " "))
}

func fieldError(field string, value any, msg string) error {
	return fmt.Errorf("cgroupmgr: %s=%v: %s", field, value, msg)
}
