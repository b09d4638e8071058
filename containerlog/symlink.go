package containerlog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// DefaultContainersLogDir is where the kubelet links every container's log
// for log collectors (fluentd, fluent-bit, promtail... read
// /var/log/containers/*.log).
const DefaultContainersLogDir = "/var/log/containers"

const (
	symlinkSuffix = ".log"
	// maxFileNameLen is ext4's limit on a file name, to which the kubelet
	// truncates a symlink's name.
	maxFileNameLen = 255
	// minIDLen is the shortest container ID prefix the kubelet asks the
	// runtime about when it sweeps dead symlinks.
	minIDLen = 6
)

// ContainerRef names a container instance as its symlink does.
type ContainerRef struct {
	PodName, PodNamespace, ContainerName, ContainerID string
}

// SymlinkPath is the kubelet's legacy log symlink for c in dir:
// <podName>_<podNamespace>_<containerName>-<containerID>.log, the name
// cut (ID first) to 255 bytes with its .log.
func SymlinkPath(dir string, c ContainerRef) string {
	name := c.PodName + "_" + c.PodNamespace + "_" + c.ContainerName + "-" + c.ContainerID
	if limit := maxFileNameLen - len(symlinkSuffix); len(name) > limit {
		name = name[:limit]
	}
	return filepath.Join(dir, name+symlinkSuffix)
}

// MakeSymlinkDir creates dir (0755) if it does not exist, as the kubelet
// does when it starts.
func MakeSymlinkDir(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("failed to create directory %q: %w", dir, err)
	}
	return nil
}

// CreateSymlink links c's symlink in dir to logPath, the container's CRI
// log file (its sandbox's LogDirectory joined with its LogPath); the
// kubelet does it once the container has started. If logPath does not
// exist, nothing is created, as in the kubelet: the link would only dangle
// (a runtime logging elsewhere). A link to logPath already there is not
// an error, so that a restarted agent may do it again.
func CreateSymlink(dir string, c ContainerRef, logPath string) error {
	if _, err := os.Stat(logPath); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	link := SymlinkPath(dir, c)
	err := os.Symlink(logPath, link)
	if errors.Is(err, fs.ErrExist) {
		if target, rerr := os.Readlink(link); rerr == nil && target == logPath {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("failed to create legacy symbolic link %q to container %q log %q: %w", link, c.ContainerID, logPath, err)
	}
	return nil
}

// RemoveSymlink removes c's symlink from dir, as the kubelet does when it
// removes the container's logs; a link already gone is not an error.
func RemoveSymlink(dir string, c ContainerRef) error {
	link := SymlinkPath(dir, c)
	if err := os.Remove(link); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("failed to remove container %q log legacy symbolic link %q: %w", c.ContainerID, link, err)
	}
	return nil
}

// RemoveDeadSymlinks removes the *.log links in dir whose target is gone,
// as the kubelet's container GC does, and returns them. A link whose
// container the runtime still has and has not exited is kept: its target
// is missing only between a rotation's rename and the runtime's reopen.
// A link whose name holds no container ID, or whose container the
// runtime does not know (any ContainerStatus error), goes.
func RemoveDeadSymlinks(ctx context.Context, dir string, rt StatusReader) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to read container logs directory %q: %w", dir, err)
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		link := filepath.Join(dir, e.Name())
		if !strings.HasSuffix(e.Name(), symlinkSuffix) || !dangling(link) || !deadContainer(ctx, rt, e.Name()) {
			continue
		}
		if err := os.Remove(link); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("failed to remove container log dead symlink %q: %w", link, err))
			continue
		}
		removed = append(removed, link)
	}
	return removed, errors.Join(errs...)
}

// dangling: following path finds nothing.
func dangling(path string) bool {
	_, err := os.Stat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// deadContainer says whether the container a dangling link's name holds
// no longer needs it.
func deadContainer(ctx context.Context, rt StatusReader, name string) bool {
	id, ok := containerIDFromSymlink(name)
	if !ok {
		return true
	}
	resp, err := rt.ContainerStatus(ctx, id, false)
	if err != nil {
		return true
	}
	status := resp.GetStatus()
	return status != nil && status.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED
}

// containerIDFromSymlink is the kubelet's getContainerIDFromLegacyLogSymlink:
// what follows the name's last "-", without .log, at least 6 characters (a
// truncated name holds a prefix of the ID, which the runtime accepts).
func containerIDFromSymlink(name string) (string, bool) {
	i := strings.LastIndex(name, "-")
	id := strings.TrimSuffix(name[i+1:], symlinkSuffix)
	if !strings.HasSuffix(name, symlinkSuffix) || len(id) < minIDLen {
		return "", false
	}
	return id, true
}
