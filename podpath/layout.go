package podpath

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The kubelet's defaults for --root-dir and --pod-logs-dir.
const (
	DefaultRootDir    = "/var/lib/kubelet"
	DefaultPodLogsDir = "/var/log/pods"
)

// logDirSeparator joins namespace, name and UID in a pod's log directory
// name, as the kubelet's BuildPodLogsDirectory does.
const logDirSeparator = "_"

// Layout is the kubelet's directory layout for pods. The zero value uses
// the kubelet's defaults. Every method checks the pod data it is given and
// returns an error naming the field (metadata.uid, metadata.name, ...) and
// the value, instead of a path outside its base.
type Layout struct {
	// RootDir is --root-dir (default /var/lib/kubelet).
	RootDir string
	// PodLogsDir is --pod-logs-dir (default /var/log/pods).
	PodLogsDir string
}

// Root is RootDir or its default.
func (l Layout) Root() string {
	if l.RootDir == "" {
		return DefaultRootDir
	}
	return filepath.Clean(l.RootDir)
}

// Logs is PodLogsDir or its default.
func (l Layout) Logs() string {
	if l.PodLogsDir == "" {
		return DefaultPodLogsDir
	}
	return filepath.Clean(l.PodLogsDir)
}

// PodsDir is <root>/pods, the parent of every pod directory.
func (l Layout) PodsDir() string { return filepath.Join(l.Root(), "pods") }

// PodDir is <root>/pods/<uid>.
func (l Layout) PodDir(uid types.UID) (string, error) {
	if err := checkUID(uid); err != nil {
		return "", err
	}
	return filepath.Join(l.PodsDir(), string(uid)), nil
}

// PodVolumeDir is <root>/pods/<uid>/volumes/<plugin>/<volume>, plugin being
// the escaped plugin name (e.g. "kubernetes.io~empty-dir").
func (l Layout) PodVolumeDir(uid types.UID, plugin, volume string) (string, error) {
	dir, err := l.PodDir(uid)
	if err != nil {
		return "", err
	}
	if err := checkElement("volume plugin", plugin); err != nil {
		return "", err
	}
	if err := checkElement("spec.volumes.name", volume); err != nil {
		return "", err
	}
	return filepath.Join(dir, "volumes", plugin, volume), nil
}

// PodContainerDir is <root>/pods/<uid>/containers/<container>, where the
// kubelet keeps a container's termination-message files.
func (l Layout) PodContainerDir(uid types.UID, container string) (string, error) {
	dir, err := l.PodDir(uid)
	if err != nil {
		return "", err
	}
	if err := checkElement("spec.containers.name", container); err != nil {
		return "", err
	}
	return filepath.Join(dir, "containers", container), nil
}

// PodLogsDirectory is <pod-logs-dir>/<namespace>_<name>_<uid> (the kubelet's
// BuildPodLogsDirectory).
func (l Layout) PodLogsDirectory(namespace, name string, uid types.UID) (string, error) {
	base, err := PodLogsDirName(namespace, name, uid)
	if err != nil {
		return "", err
	}
	return filepath.Join(l.Logs(), base), nil
}

// PodLogsDirName is a pod's log directory name, <namespace>_<name>_<uid>.
// Namespace and name must be path elements without '_' (DNS names are),
// the UID a valid one (ValidateUID), and the whole at most MaxElementLen
// bytes: the error names the field at fault.
func PodLogsDirName(namespace, name string, uid types.UID) (string, error) {
	for _, f := range []struct{ path, value string }{{"metadata.namespace", namespace}, {"metadata.name", name}} {
		if err := checkElement(f.path, f.value); err != nil {
			return "", err
		}
		if strings.Contains(f.value, logDirSeparator) {
			return "", invalid(f.path, f.value, "must not contain '_' (it separates the parts of the pod's log directory name)")
		}
	}
	if err := checkUID(uid); err != nil {
		return "", err
	}
	dir := namespace + logDirSeparator + name + logDirSeparator + string(uid)
	if len(dir) > MaxElementLen {
		return "", invalid("metadata.name", name, fmt.Sprintf(
			"with namespace %q and uid %q, the pod's log directory name <namespace>_<name>_<uid> would be %d bytes, over the %d a file name may have",
			namespace, string(uid), len(dir), MaxElementLen))
	}
	return dir, nil
}

// ParsePodLogsDirName splits a log directory name made by PodLogsDirName;
// ok is false for any other name.
func ParsePodLogsDirName(dir string) (namespace, name string, uid types.UID, ok bool) {
	parts := strings.Split(dir, logDirSeparator)
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || ValidateUID(parts[2]) != nil {
		return "", "", "", false
	}
	return parts[0], parts[1], types.UID(parts[2]), true
}

// ContainerLogPath is a container instance's log file relative to its
// pod's log directory, <container>/<restartCount>.log (the CRI LogPath).
func ContainerLogPath(container string, restartCount int) (string, error) {
	if err := checkElement("spec.containers.name", container); err != nil {
		return "", err
	}
	return filepath.Join(container, strconv.Itoa(restartCount)+".log"), nil
}

func checkUID(uid types.UID) error {
	if msgs := ValidateUID(string(uid)); len(msgs) > 0 {
		return invalid("metadata.uid", string(uid), msgs[0])
	}
	return nil
}

func checkElement(path, value string) error {
	if msgs := ValidateElement(value); len(msgs) > 0 {
		return invalid(path, value, msgs[0])
	}
	return nil
}

// InvalidValue is field.Invalid with a long value cut for display (Quote):
// a 2,000-byte UID is named by its start and its length.
func InvalidValue(fld *field.Path, value, msg string) *field.Error {
	if len(value) > 80 {
		return &field.Error{Type: field.ErrorTypeInvalid, Field: fld.String(), BadValue: field.OmitValueType{},
			Detail: fmt.Sprintf("%s: %s", Quote(value), msg)}
	}
	return field.Invalid(fld, value, msg)
}

func invalid(path, value, msg string) error { return InvalidValue(field.NewPath(path), value, msg) }
