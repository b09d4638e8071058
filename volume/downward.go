package volume

import (
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"

	"github.com/nodekit-dev/nodekit/fieldpath"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
)

// DownwardAPI serves downwardAPI volumes: pod fields and container
// resources as files, written again on every SetUp (each pod sync), so
// changed labels and annotations reach running pods.
type DownwardAPI struct {
	// NodeAllocatable is what a limit a container does not set reads as
	// (the kubelet's default); nil reads 0.
	NodeAllocatable func() v1.ResourceList
}

// Name is the kubelet's escaped plugin name.
func (DownwardAPI) Name() string { return "kubernetes.io~downward-api" }

// Supports reports a downwardAPI volume.
func (DownwardAPI) Supports(vol *v1.Volume) bool { return vol.DownwardAPI != nil }

// ReadOnly: downwardAPI volumes are mounted read-only.
func (DownwardAPI) ReadOnly() bool { return true }

// SetUp writes the items' files.
func (d DownwardAPI) SetUp(pod *v1.Pod, vol *v1.Volume, vd VolumeDir) (string, error) {
	src := vol.DownwardAPI
	files, err := downwardFiles(pod, src.Items, fileMode(src.DefaultMode, DefaultDownwardAPIMode), allocatable(d.NodeAllocatable), "downwardAPI")
	if err != nil {
		return "", err
	}
	return writeVolume(pod, vd, files, onDisk)
}

// TearDown has nothing to undo.
func (DownwardAPI) TearDown(string) error { return nil }

func allocatable(f func() v1.ResourceList) v1.ResourceList {
	if f == nil {
		return nil
	}
	return f()
}

// downwardFiles resolves items; errors name the item (field is the
// items' path in the pod spec, for messages).
func downwardFiles(pod *v1.Pod, items []v1.DownwardAPIVolumeFile, mode os.FileMode, alloc v1.ResourceList, field string) (map[string]File, error) {
	files := make(map[string]File, len(items))
	for i, it := range items {
		var v string
		var err error
		switch {
		case it.FieldRef != nil:
			if v, err = fieldpath.PodField(pod, it.FieldRef.FieldPath); err != nil {
				return nil, fmt.Errorf("%s.items[%d].fieldRef.fieldPath: %w", field, i, err)
			}
		case it.ResourceFieldRef != nil:
			c := kc.FindContainer(pod, it.ResourceFieldRef.ContainerName)
			if c == nil {
				return nil, fmt.Errorf("%s.items[%d].resourceFieldRef.containerName: Not found: %q", field, i, it.ResourceFieldRef.ContainerName)
			}
			if v, err = fieldpath.ResourceValue(c, it.ResourceFieldRef, alloc); err != nil {
				return nil, fmt.Errorf("%s.items[%d].resourceFieldRef.%w", field, i, err)
			}
		default:
			return nil, fmt.Errorf("%s.items[%d]: Required value: fieldRef or resourceFieldRef", field, i)
		}
		files[it.Path] = File{Data: []byte(v), Mode: fileMode(it.Mode, mode)}
	}
	return files, nil
}
