package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"

	"k8s.io/apimachinery/pkg/types"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/podpath"
)

// CleanupPodLogs removes the log directories under PodLogsDir of pods that
// are gone: the kubelet's container GC (evictPodLogsDirectories) for pods
// removed while no one removed their logs, e.g. while the agent was down.
// A directory is kept when active reports its pod UID (a pod the caller
// still has) or when the runtime still has a sandbox of that pod (whoever
// it belongs to); directories whose names are not <namespace>_<name>_<uid>
// are not the manager's and are left alone. Like the kubelet, call it only
// once every pod source has delivered its pods. It returns the UIDs whose
// logs it removed.
func (m *Manager) CleanupPodLogs(ctx context.Context, active func(types.UID) bool) ([]types.UID, error) {
	sandboxes, err := m.cfg.Runtime.ListPodSandbox(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("pod logs clean-up: listing sandboxes: %w", err)
	}
	inRuntime := make(map[types.UID]bool, len(sandboxes))
	for _, s := range sandboxes {
		if uid := kc.ReadLabels(s.Labels, nil).PodUID; uid != "" {
			inRuntime[uid] = true
		}
		if md := s.GetMetadata(); md != nil && md.Uid != "" {
			inRuntime[types.UID(md.Uid)] = true
		}
	}
	return m.removePodLogs(func(uid types.UID) bool { return !inRuntime[uid] && (active == nil || !active(uid)) })
}

// removePodLogs removes each pod log directory whose UID gone says is gone,
// through podpath (nothing outside PodLogsDir, no symlink followed).
func (m *Manager) removePodLogs(gone func(types.UID) bool) ([]types.UID, error) {
	entries, err := os.ReadDir(m.cfg.PodLogsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pod logs: %w", err)
	}
	var removed []types.UID
	var errs []error
	for _, e := range entries {
		_, _, uid, ok := podpath.ParsePodLogsDirName(e.Name())
		if !ok || !e.IsDir() || !gone(uid) {
			continue
		}
		if err := podpath.RemoveAllIn(m.cfg.PodLogsDir, e.Name()); err != nil {
			errs = append(errs, fmt.Errorf("removing pod logs %s: %w", e.Name(), err))
			continue
		}
		removed = append(removed, uid)
	}
	sort.Slice(removed, func(i, j int) bool { return removed[i] < removed[j] })
	return removed, errors.Join(errs...)
}
