package volume

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Objects reads the ConfigMaps and Secrets that pods reference, from the
// API server: a clientset wrapped by the caller (the Node authorizer lets
// a node read exactly those of its pods). Errors must let
// apierrors.IsNotFound tell a missing object.
type Objects interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// The API's default modes of configMap, secret, downwardAPI and projected
// volume files.
const (
	DefaultConfigMapMode   = 0o644
	DefaultSecretMode      = 0o644
	DefaultDownwardAPIMode = 0o644
	DefaultProjectedMode   = 0o644
	getTimeout             = 10 * time.Second
)

// ConfigMap serves configMap volumes: the keys (or the chosen items) as
// files, written atomically, refreshed on every SetUp (each pod sync), so
// an updated ConfigMap reaches running pods.
type ConfigMap struct{ Objects Objects }

// Name is the kubelet's escaped plugin name.
func (ConfigMap) Name() string { return "kubernetes.io~configmap" }

// Supports reports a configMap volume.
func (ConfigMap) Supports(vol *v1.Volume) bool { return vol.ConfigMap != nil }

// ReadOnly: configMap volumes are mounted read-only.
func (ConfigMap) ReadOnly() bool { return true }

// SetUp writes the ConfigMap's files; a missing ConfigMap is an error
// unless the volume is optional (then it is empty).
func (c ConfigMap) SetUp(pod *v1.Pod, vol *v1.Volume, vd VolumeDir) (string, error) {
	src := vol.ConfigMap
	files, err := objectFiles("configMap", src.Name, src.Items, fileMode(src.DefaultMode, DefaultConfigMapMode), src.Optional,
		configMapData(c.Objects, pod.Namespace, src.Name))
	if err != nil {
		return "", err
	}
	return writeVolume(pod, vd, files, onDisk)
}

// TearDown has nothing to undo: the files go with the directory.
func (ConfigMap) TearDown(string) error { return nil }

// Secret serves secret volumes like ConfigMap serves configMap volumes,
// on a tmpfs, as the kubelet does: secrets never touch the disk.
type Secret struct {
	Objects Objects
	// NodeAllocatable and PodMemoryLimit size the tmpfs as EmptyDir's
	// size a medium Memory one (nil: not known).
	NodeAllocatable func() v1.ResourceList
	PodMemoryLimit  func(pod *v1.Pod) int64
}

// Name is the kubelet's escaped plugin name.
func (Secret) Name() string { return "kubernetes.io~secret" }

// Supports reports a secret volume.
func (Secret) Supports(vol *v1.Volume) bool { return vol.Secret != nil }

// ReadOnly: secret volumes are mounted read-only.
func (Secret) ReadOnly() bool { return true }

// SetUp mounts the tmpfs if it is not there and writes the Secret's files
// (see ConfigMap.SetUp).
func (s Secret) SetUp(pod *v1.Pod, vol *v1.Volume, vd VolumeDir) (string, error) {
	src := vol.Secret
	files, err := objectFiles("secret", src.SecretName, src.Items, fileMode(src.DefaultMode, DefaultSecretMode), src.Optional,
		secretData(s.Objects, pod.Namespace, src.SecretName))
	if err != nil {
		return "", err
	}
	return writeVolume(pod, vd, files, memorySize(pod, nil, s.NodeAllocatable, s.PodMemoryLimit))
}

// TearDown unmounts the tmpfs.
func (Secret) TearDown(dir string) error { return unmountMemory(dir) }

type dataFunc func(context.Context) (map[string][]byte, error)

// configMapData reads a ConfigMap's data and binaryData as one map.
func configMapData(objs Objects, ns, name string) dataFunc {
	return func(ctx context.Context) (map[string][]byte, error) {
		if objs == nil {
			return nil, errNoAPIServer
		}
		cm, err := objs.GetConfigMap(ctx, ns, name)
		if err != nil {
			return nil, err
		}
		data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
		for k, v := range cm.Data {
			data[k] = []byte(v)
		}
		for k, v := range cm.BinaryData {
			data[k] = v
		}
		return data, nil
	}
}

// secretData reads a Secret's data.
func secretData(objs Objects, ns, name string) dataFunc {
	return func(ctx context.Context) (map[string][]byte, error) {
		if objs == nil {
			return nil, errNoAPIServer
		}
		sec, err := objs.GetSecret(ctx, ns, name)
		if err != nil {
			return nil, err
		}
		return sec.Data, nil
	}
}

var errNoAPIServer = errors.New("needs an API server (this node has none)")

// objectFiles reads an object's data and picks the files; a missing object
// gives none when optional, else an error.
func objectFiles(kind, name string, items []v1.KeyToPath, mode os.FileMode, optional *bool, get dataFunc) (map[string]File, error) {
	ctx, cancel := context.WithTimeout(context.Background(), getTimeout)
	defer cancel()
	data, err := get(ctx)
	found := err == nil
	if err != nil && !(apierrors.IsNotFound(err) && optional != nil && *optional) {
		return nil, fmt.Errorf("%s %q: %w", kind, name, err)
	}
	return project(data, items, mode, optional, kind, name, found)
}

// fileMode is mode when set, else def.
func fileMode(mode *int32, def os.FileMode) os.FileMode {
	if mode != nil {
		return os.FileMode(*mode)
	}
	return def
}

// project picks the files: every key, or only the items (each with its
// path and mode); a missing item key is an error unless optional.
func project(data map[string][]byte, items []v1.KeyToPath, mode os.FileMode, optional *bool,
	kind, name string, found bool) (map[string]File, error) {
	files := map[string]File{}
	if len(items) == 0 {
		for k, v := range data {
			files[k] = File{Data: v, Mode: mode}
		}
		return files, nil
	}
	for i, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if found && (optional == nil || !*optional) {
				return nil, fmt.Errorf("%s %q: items[%d].key: Not found: %q", kind, name, i, it.Key)
			}
			continue
		}
		files[it.Path] = File{Data: v, Mode: fileMode(it.Mode, mode)}
	}
	return files, nil
}

// onDisk is writeVolume's tmpfs size for a volume on disk.
const onDisk = -1

// writeVolume makes vd hold exactly files, as the kubelet's plugins that
// wrap an emptyDir do: its directory (setupDir), on disk or, unless
// tmpfsSize is onDisk, on a tmpfs of that size (0: the kernel's default),
// the files written atomically and given to the pod's fsGroup
// (read-only) before they are visible.
func writeVolume(pod *v1.Pod, vd VolumeDir, files map[string]File, tmpfsSize int64) (string, error) {
	dir, err := setupDir(vd)
	if err != nil {
		return "", err
	}
	if tmpfsSize != onDisk {
		if err := mountMemory(dir, tmpfsSize); err != nil {
			return "", err
		}
	}
	if err := writeAtomic(dir, files, podFSGroup(pod)); err != nil {
		return "", fmt.Errorf("writing %s: %w", dir, err)
	}
	return dir, nil
}
