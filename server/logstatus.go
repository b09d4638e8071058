package server

import (
	"fmt"
	"net/http"

	v1 "k8s.io/api/core/v1"
)

// logTarget is the container instance a log request reads.
type logTarget struct {
	id string // its container ID, as the pod's status says
	// previous is the LogLocator's: the instance before the newest.
	previous bool
}

// logInstance is the kubelet's getContainerLogs checks, the pod (404)
// and the container in its spec (404), then the instance the pod's status
// names (validateContainerLogStatus, 400 when there is none to read).
func (h *Handler) logInstance(ns, name, container string, previous bool) (logTarget, int, error) {
	pod, err := h.findPod(sessionTarget{namespace: ns, name: name})
	if err != nil {
		return logTarget{}, http.StatusNotFound, fmt.Errorf("pod %q does not exist", name)
	}
	if findSpec(pod, container) == nil {
		return logTarget{}, http.StatusNotFound, fmt.Errorf("container %q not found in pod %q", container, name)
	}
	t, err := logInstanceOf(&pod.Status, name, container, previous)
	if err != nil {
		return t, http.StatusBadRequest, err
	}
	return t, 0, nil
}

// logInstanceOf is the kubelet's validateContainerLogStatus, with its
// messages: previous reads the last terminated instance; else the running
// one, the terminated one, or the one that ran last.
func logInstanceOf(st *v1.PodStatus, pod, container string, previous bool) (logTarget, error) {
	cs := containerStatus(st, container)
	if cs == nil {
		return logTarget{}, fmt.Errorf("container %q in pod %q is not available", container, pod)
	}
	last, state := cs.LastTerminationState.Terminated, cs.State
	var id string
	switch {
	case previous:
		if last == nil || last.ContainerID == "" {
			return logTarget{}, fmt.Errorf("previous terminated container %q in pod %q not found", container, pod)
		}
		id = last.ContainerID
	case state.Running != nil:
		id = cs.ContainerID
	case state.Terminated != nil && state.Terminated.ContainerID != "":
		id = state.Terminated.ContainerID
	case state.Terminated != nil || last != nil:
		// The next instance did not start: the last one's log.
		if last == nil || last.ContainerID == "" {
			return logTarget{}, fmt.Errorf("container %q in pod %q is terminated", container, pod)
		}
		id = last.ContainerID
	case state.Waiting != nil:
		return logTarget{}, waitingError(container, pod, state.Waiting.Reason)
	default:
		return logTarget{}, fmt.Errorf("container %q in pod %q is waiting to start - no logs yet", container, pod)
	}
	// The status's ContainerID is the newest instance, the LogLocator's
	// default; a crash-looping container's last one is that one too.
	return logTarget{id: id, previous: cs.ContainerID != "" && id != cs.ContainerID}, nil
}

// waitingError tells why a container that never ran has no log, naming
// the commonest pending failures as the kubelet does.
func waitingError(container, pod, reason string) error {
	switch reason {
	case "ErrImagePull":
		reason = "image can't be pulled"
	case "ImagePullBackOff":
		reason = "trying and failing to pull image"
	}
	return fmt.Errorf("container %q in pod %q is waiting to start: %s", container, pod, reason)
}

// containerStatus finds a container's status, as the kubelet looks:
// containers, init containers, then ephemeral containers.
func containerStatus(st *v1.PodStatus, name string) *v1.ContainerStatus {
	for _, list := range [][]v1.ContainerStatus{st.ContainerStatuses, st.InitContainerStatuses, st.EphemeralContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// stillRunning is the kubelet's isContainerRunning over the pod statuses:
// whether the instance id is the container's running one.
func (h *Handler) stillRunning(ns, name, container, id string) bool {
	pod, err := h.findPod(sessionTarget{namespace: ns, name: name})
	if err != nil {
		return false
	}
	cs := containerStatus(&pod.Status, container)
	return cs != nil && cs.State.Running != nil && cs.ContainerID == id
}

// kubeletError answers as the kubelet's go-restful WriteError: the
// message alone, with no newline, which the API server passes on as the
// Status message (kubectl's "Error from server (BadRequest): ...").
func kubeletError(w http.ResponseWriter, code int, err error) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = fmt.Fprint(w, err.Error())
}
