package volume

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/podpath"
)

// Plugin serves one kind of volume.
type Plugin interface {
	// Name is the plugin's escaped name, the directory its volumes live in
	// under <root-dir>/pods/<uid>/volumes (e.g. "kubernetes.io~empty-dir").
	Name() string
	// Supports reports whether the plugin serves vol.
	Supports(vol *v1.Volume) bool
	// SetUp makes vol ready for pod, idempotently, and returns the host
	// path to mount. dir is the volume's own directory below --root-dir
	// (the plugin need not use it).
	SetUp(pod *v1.Pod, vol *v1.Volume, dir VolumeDir) (string, error)
	// TearDown undoes what SetUp did that removing dir does not (an
	// unmount); dir is removed after it.
	TearDown(dir string) error
}

// VolumeDir is a volume's own directory,
// <root-dir>/pods/<uid>/volumes/<plugin>/<name>.
type VolumeDir struct{ root, rel, meta string }

// Path is the directory's path.
func (d VolumeDir) Path() string { return filepath.Join(d.root, d.rel) }

// Create makes the directory and its parents below --root-dir through
// os.Root (nothing below --root-dir is followed out of it) and returns its
// path.
func (d VolumeDir) Create(perm os.FileMode) (string, error) {
	return podpath.MkdirAllIn(d.root, d.rel, perm)
}

// ready reports whether the volume's directory exists and was marked
// ready: the kubelet's <root-dir>/pods/<uid>/plugins/<plugin>/<name>/ready,
// out of the containers' reach.
func (d VolumeDir) ready() bool {
	if d.meta == "" {
		return false
	}
	_, err := os.Stat(filepath.Join(d.root, d.meta, "ready"))
	_, derr := os.Stat(d.Path())
	return err == nil && derr == nil
}

func (d VolumeDir) setReady() error {
	if d.meta == "" {
		return nil
	}
	dir, err := podpath.MkdirAllIn(d.root, d.meta, 0o750)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "ready"), nil, 0o600)
}

// Config configures a Manager.
type Config struct {
	// Layout locates pod directories (--root-dir).
	Layout podpath.Layout
	// Plugins serve the volume types, first match wins. Default:
	// EmptyDir, HostPath and Image.
	Plugins []Plugin
}

// Manager sets up and tears down pods' volumes, one Plugin per volume type
// (Config.Plugins); other volume types are refused by name. The built-in
// plugins:
//
//   - emptyDir: a directory <root-dir>/pods/<uid>/volumes/kubernetes.io~empty-dir/<name>
//     made 0777 past the umask, or, with medium Memory, a tmpfs there;
//     set up once (marked ready in <root-dir>/pods/<uid>/plugins);
//   - hostPath: the node's path, with the API's type checks (the *OrCreate
//     types create what is missing);
//   - configMap and secret (items, defaultMode, optional) from the API
//     server through Objects (package volume/apiclient over client-go);
//   - downwardAPI: pod fields and container resources (package fieldpath);
//   - projected: configMap, secret, downwardAPI and serviceAccountToken
//     sources in one directory; tokens come from TokenRequests bound to
//     the pod, cached and refreshed by Tokens as the kubelet's token
//     manager does (at 80% of their lifetime, at most 24 h);
//   - image: nothing on the node; the mount (no host path, read-only,
//     the subPath inside the image) is for the runtime manager, which
//     pulls the image and has the runtime mount it (CRI Mount.image).
//
// The API-backed and downward volumes are written atomically (a ..data
// symlink swapped to a new directory, as the kubelet's AtomicWriter) and
// again on every SetUp; SetUpAll on each pod sync is how an updated
// ConfigMap, Secret, label or token reaches a running pod. Secret and
// projected volumes live on a tmpfs, sized as the kubelet sizes a memory
// emptyDir (node allocatable, pod memory limit, sizeLimit), so secrets
// never touch the disk; these four types are mounted read-only. With a pod
// fsGroup, SetVolumeOwnership gives each volume but hostPath to the group.
type Manager struct {
	layout  podpath.Layout
	plugins []Plugin
}

// New returns a Manager with the default plugins if cfg has none.
func New(cfg Config) (*Manager, error) {
	for name, dir := range map[string]string{"Layout.RootDir": cfg.Layout.RootDir, "Layout.PodLogsDir": cfg.Layout.PodLogsDir} {
		if dir != "" && !filepath.IsAbs(dir) {
			return nil, fmt.Errorf("volume: Config.%s: Invalid value: %q: must be an absolute path", name, dir)
		}
	}
	for i, p := range cfg.Plugins {
		if p == nil {
			return nil, fmt.Errorf("volume: Config.Plugins[%d] is nil", i)
		}
	}
	if len(cfg.Plugins) == 0 {
		cfg.Plugins = []Plugin{EmptyDir{}, HostPath{}, Image{}}
	}
	return &Manager{layout: cfg.Layout, plugins: cfg.Plugins}, nil
}

// Mounts sets up (idempotently) the volumes container c mounts and returns
// their CRI mounts; it is a kuberuntime.MountProvider. Errors name the field.
// A subPathExpr expands with what Mounts knows of c's environment without
// the runtime: env values and pod fieldRefs (see ContainerMounts).
func (m *Manager) Mounts(pod *v1.Pod, c *v1.Container) ([]kc.Mount, error) {
	return m.mounts(pod, c, staticEnv(pod, c))
}

// ContainerMounts is Mounts with c's resolved environment, env (the
// runtime manager's, as the kubelet hands its container options' env to
// makeMounts): a subPathExpr expands with all of it.
func (m *Manager) ContainerMounts(pod *v1.Pod, c *v1.Container, env []v1.EnvVar) ([]kc.Mount, error) {
	vars := make(map[string]string, len(env))
	for _, e := range env {
		vars[e.Name] = e.Value
	}
	return m.mounts(pod, c, vars)
}

func (m *Manager) mounts(pod *v1.Pod, c *v1.Container, env map[string]string) ([]kc.Mount, error) {
	byName := make(map[string]*v1.Volume, len(pod.Spec.Volumes))
	for i := range pod.Spec.Volumes {
		byName[pod.Spec.Volumes[i].Name] = &pod.Spec.Volumes[i]
	}
	var out []kc.Mount
	for i, vm := range c.VolumeMounts {
		vol, ok := byName[vm.Name]
		if !ok {
			return nil, fmt.Errorf("volumeMounts[%d].name: Not found: %q", i, vm.Name)
		}
		host, p, err := m.setUp(pod, vol)
		if err != nil {
			return nil, fmt.Errorf("volumes[%s]: %w", vol.Name, err)
		}
		if isDevice(p, pod, vol) {
			return nil, fmt.Errorf("volumeMounts[%d]: volume %q has volumeMode Block, but is specified in volumeMounts", i, vm.Name)
		}
		sub, field, err := subPath(vm, env)
		if err != nil {
			return nil, fmt.Errorf("volumeMounts[%d].%s: %w", i, field, err)
		}
		if vol.Image != nil {
			// The runtime mounts the image, and its subPath inside it,
			// read-only; the runtime manager fills in Image.
			out = append(out, kc.Mount{Name: vm.Name, ContainerPath: vm.MountPath, ReadOnly: true, ImageSubPath: sub})
			continue
		}
		if sub != "" {
			if host, err = mkdirSubPath(host, sub); err != nil {
				return nil, fmt.Errorf("volumeMounts[%d].%s: %w", i, field, err)
			}
		}
		// The kubelet mounts read-only what a container must not change.
		// A claim's readOnly too (the kubelet's spec.ReadOnly).
		ro, _ := p.(ReadOnlyPlugin)
		readOnly := vm.ReadOnly || ro != nil && ro.ReadOnly() || claimReadOnly(vol)
		out = append(out, kc.Mount{Name: vm.Name, ContainerPath: vm.MountPath, HostPath: host, ReadOnly: readOnly})
	}
	return m.devices(pod, c, byName, out)
}

// DevicePlugin is a Plugin some of whose volumes are block devices (a
// claim of volumeMode Block): SetUp's host path is then the device, which
// only volumeDevices may use.
type DevicePlugin interface {
	IsDevice(pod *v1.Pod, vol *v1.Volume) bool
}

func isDevice(p Plugin, pod *v1.Pod, vol *v1.Volume) bool {
	d, ok := p.(DevicePlugin)
	return ok && d.IsDevice(pod, vol)
}

// devices adds c's volumeDevices to out, as the kubelet's
// makeBlockVolumes: each a block volume's device at its devicePath.
func (m *Manager) devices(pod *v1.Pod, c *v1.Container, byName map[string]*v1.Volume, out []kc.Mount) ([]kc.Mount, error) {
	for i, vd := range c.VolumeDevices {
		vol, ok := byName[vd.Name]
		if !ok {
			return nil, fmt.Errorf("volumeDevices[%d].name: Not found: %q", i, vd.Name)
		}
		if !filepath.IsAbs(vd.DevicePath) {
			return nil, fmt.Errorf("volumeDevices[%d].devicePath: error DevicePath `%s` must be an absolute path", i, vd.DevicePath)
		}
		host, p, err := m.setUp(pod, vol)
		if err != nil {
			return nil, fmt.Errorf("volumes[%s]: %w", vol.Name, err)
		}
		if !isDevice(p, pod, vol) {
			return nil, fmt.Errorf("volumeDevices[%d]: volume %q has volumeMode Filesystem, but is specified in volumeDevices", i, vd.Name)
		}
		readOnly := claimReadOnly(vol)
		out = append(out, kc.Mount{Name: vd.Name, ContainerPath: vd.DevicePath, HostPath: host, ReadOnly: readOnly, Device: true})
	}
	return out, nil
}

// SetUp makes one of pod's volumes ready and returns its host path.
func (m *Manager) SetUp(pod *v1.Pod, vol *v1.Volume) (string, error) {
	host, _, err := m.setUp(pod, vol)
	return host, err
}

func (m *Manager) setUp(pod *v1.Pod, vol *v1.Volume) (string, Plugin, error) {
	p := m.pluginFor(vol)
	if p == nil {
		return "", nil, fmt.Errorf("unsupported volume type: this node serves %s volumes", m.supported())
	}
	dir, err := m.layout.PodVolumeDir(pod.UID, p.Name(), vol.Name)
	if err != nil {
		return "", nil, err
	}
	podDir, err := m.layout.PodDir(pod.UID)
	if err != nil {
		return "", nil, err
	}
	rel, err := filepath.Rel(m.layout.Root(), dir)
	if err != nil {
		return "", nil, err
	}
	meta, err := filepath.Rel(m.layout.Root(), filepath.Join(podDir, "plugins", p.Name(), vol.Name))
	if err != nil {
		return "", nil, err
	}
	host, err := p.SetUp(pod, vol, VolumeDir{root: m.layout.Root(), rel: rel, meta: meta})
	return host, p, err
}

// pluginFor is the first plugin that supports vol, or nil.
func (m *Manager) pluginFor(vol *v1.Volume) Plugin {
	for _, p := range m.plugins {
		if p.Supports(vol) {
			return p
		}
	}
	return nil
}

func (m *Manager) supported() string {
	names := make([]string, 0, len(m.plugins))
	for _, p := range m.plugins {
		names = append(names, strings.TrimPrefix(p.Name(), "kubernetes.io~"))
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// SetUpAll sets up every volume of pod again: the kubelet's periodic
// volume sync, through which an updated ConfigMap or Secret reaches a
// running pod. Each failure is a *SetUpError, joined.
func (m *Manager) SetUpAll(pod *v1.Pod) error {
	var errs []error
	for i := range pod.Spec.Volumes {
		if _, err := m.SetUp(pod, &pod.Spec.Volumes[i]); err != nil {
			errs = append(errs, &SetUpError{Volume: pod.Spec.Volumes[i].Name, Err: err})
		}
	}
	return errors.Join(errs...)
}

// SetUpError is one volume SetUpAll could not set up (errors.As finds
// each in its joined error).
type SetUpError struct {
	Volume string
	Err    error
}

func (e *SetUpError) Error() string { return fmt.Sprintf("volumes[%s]: %v", e.Volume, e.Err) }

func (e *SetUpError) Unwrap() error { return e.Err }

// VolumeName is the volume's name in the pod (for callers that cannot
// import this package's types).
func (e *SetUpError) VolumeName() string { return e.Volume }

// ReadOnlyPlugin is a Plugin whose volumes are mounted read-only whatever
// the volumeMount says, and owned read-only by an fsGroup: the kubelet's
// Attributes().ReadOnly, true for configMap, secret, downwardAPI and
// projected.
type ReadOnlyPlugin interface {
	ReadOnly() bool
}

// PodForgetter is a Plugin that keeps state per pod (Projected's tokens);
// TearDown tells it the pod is gone.
type PodForgetter interface {
	ForgetPod(uid types.UID)
}

// PodUIDs are the pods that have a directory under <root-dir>/pods: a
// clean-up tears down those of pods gone (the kubelet's
// cleanupOrphanedPodDirs).
func (m *Manager) PodUIDs() []types.UID {
	var out []types.UID
	for _, name := range readDirs(m.layout.PodsDir()) {
		if len(podpath.ValidateUID(name)) == 0 {
			out = append(out, types.UID(name))
		}
	}
	return out
}

// TearDown lets each plugin undo its volumes of pod (unmounts), tells the
// PodForgetters, unmounts any tmpfs left in a volume, and removes the
// pod's directory, <root-dir>/pods/<uid>, without following any symlink
// out of it. It needs only pod.UID: an orphaned directory is torn down.
func (m *Manager) TearDown(pod *v1.Pod) error {
	for _, p := range m.plugins {
		if f, ok := p.(PodForgetter); ok {
			f.ForgetPod(pod.UID)
		}
	}
	podDir, err := m.layout.PodDir(pod.UID)
	if err != nil {
		return err // nothing was ever set up for it
	}
	for _, p := range m.plugins {
		base := filepath.Join(podDir, "volumes", p.Name())
		for _, name := range readDirs(base) {
			if err := p.TearDown(filepath.Join(base, name)); err != nil {
				return err
			}
		}
	}
	// A tmpfs of a plugin this Manager lacks (set up by an earlier
	// configuration) would keep the directory from going.
	for _, plugin := range readDirs(filepath.Join(podDir, "volumes")) {
		base := filepath.Join(podDir, "volumes", plugin)
		for _, name := range readDirs(base) {
			if err := unmountMemory(filepath.Join(base, name)); err != nil {
				return err
			}
		}
	}
	// Removing a directory with something still mounted below it would
	// delete what the mount shows (a local volume's data): refuse.
	left, err := mnt.mountsBelow(podDir)
	if err != nil {
		return fmt.Errorf("listing mounts below %s: %w", podDir, err)
	}
	if len(left) > 0 {
		return fmt.Errorf("pod %s: still mounted below its directory, not removing it: %v", pod.UID, left)
	}
	return podpath.RemoveAllIn(m.layout.PodsDir(), string(pod.UID))
}
