package kuberuntime

import (
	"context"
	"fmt"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"
)

// ContainerLogPath returns the CRI log file of the pod's container: its
// newest instance's, or with previous the one before (what the kubelet's
// /containerLogs?previous=true reads). The runtime says where the file
// is; a path outside PodLogsDir is refused, so a log request can never be
// made to read another file of the node.
func (m *Manager) ContainerLogPath(ctx context.Context, uid types.UID, name, namespace, container string, previous bool) (string, error) {
	st, err := m.GetPodStatus(ctx, uid, name, namespace)
	if err != nil {
		return "", err
	}
	var id string
	seen := 0
	for _, cs := range st.ContainerStatuses { // newest first
		if cs.Name != container {
			continue
		}
		if seen++; seen == 1 && !previous || seen == 2 {
			id = cs.ID
			break
		}
	}
	if id == "" {
		which := "container"
		if previous {
			which = "previous instance of container"
		}
		return "", fmt.Errorf("%s %q of pod %s/%s not found", which, container, namespace, name)
	}
	resp, err := m.cfg.Runtime.ContainerStatus(ctx, id, false)
	if err != nil {
		return "", err
	}
	path := resp.GetStatus().GetLogPath()
	if rel, err := filepath.Rel(m.cfg.PodLogsDir, path); err != nil || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("container %q of pod %s/%s: log file %q is outside the pod logs directory %s",
			container, namespace, name, path, m.cfg.PodLogsDir)
	}
	return path, nil
}
