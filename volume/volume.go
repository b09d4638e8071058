package volume

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
type VolumeDir struct{ root, rel string }

// Path is the directory's path.
func (d VolumeDir) Path() string { return filepath.Join(d.root, d.rel) }

// Create makes the directory and its parents below --root-dir through
// os.Root (nothing below --root-dir is followed out of it) and returns its
// path.
func (d VolumeDir) Create(perm os.FileMode) (string, error) {
	return podpath.MkdirAllIn(d.root, d.rel, perm)
}

// Config configures a Manager.
type Config struct {
	// Layout locates pod directories (--root-dir).
	Layout podpath.Layout
	// Plugins serve the volume types, first match wins. Default:
	// EmptyDir and HostPath.
	Plugins []Plugin
}

// Manager sets up and tears down pods' volumes.
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
		cfg.Plugins = []Plugin{EmptyDir{}, HostPath{}}
	}
	return &Manager{layout: cfg.Layout, plugins: cfg.Plugins}, nil
}

// Mounts sets up (idempotently) the volumes container c mounts and returns
// their CRI mounts; it is a runtime.MountProvider. Errors name the field.
func (m *Manager) Mounts(pod *v1.Pod, c *v1.Container) ([]kc.Mount, error) {
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
		host, err := m.SetUp(pod, vol)
		if err != nil {
			return nil, fmt.Errorf("volumes[%s]: %w", vol.Name, err)
		}
		if vm.SubPath != "" {
			if filepath.IsAbs(vm.SubPath) || slices.Contains(strings.Split(vm.SubPath, "/"), "..") {
				return nil, fmt.Errorf("volumeMounts[%d].subPath: Invalid value: %q: must be a relative path without '..'", i, vm.SubPath)
			}
			// Created through os.Root: a symlink a container left in the
			// volume cannot take it outside.
			if host, err = podpath.MkdirAllIn(host, vm.SubPath, 0o755); err != nil {
				return nil, fmt.Errorf("volumeMounts[%d].subPath: %w", i, err)
			}
		}
		out = append(out, kc.Mount{ContainerPath: vm.MountPath, HostPath: host, ReadOnly: vm.ReadOnly})
	}
	return out, nil
}

// SetUp makes one of pod's volumes ready and returns its host path.
func (m *Manager) SetUp(pod *v1.Pod, vol *v1.Volume) (string, error) {
	p := m.pluginFor(vol)
	if p == nil {
		return "", fmt.Errorf("unsupported volume type: this node serves %s volumes", m.supported())
	}
	dir, err := m.layout.PodVolumeDir(pod.UID, p.Name(), vol.Name)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(m.layout.Root(), dir)
	if err != nil {
		return "", err
	}
	return p.SetUp(pod, vol, VolumeDir{root: m.layout.Root(), rel: rel})
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
// running pod. Errors name the volume.
func (m *Manager) SetUpAll(pod *v1.Pod) error {
	var errs []error
	for i := range pod.Spec.Volumes {
		if _, err := m.SetUp(pod, &pod.Spec.Volumes[i]); err != nil {
			errs = append(errs, fmt.Errorf("volumes[%s]: %w", pod.Spec.Volumes[i].Name, err))
		}
	}
	return errors.Join(errs...)
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
// PodForgetters, and removes the pod's directory, <root-dir>/pods/<uid>,
// without following any symlink out of it.
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
	return podpath.RemoveAllIn(m.layout.PodsDir(), string(pod.UID))
}
