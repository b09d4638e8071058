package volume

import (
	"context"
	"fmt"
	"maps"
	"os"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Projected serves projected volumes: configMap, secret, downwardAPI and
// serviceAccountToken sources in one directory on a tmpfs (as Secret's),
// written atomically again on every SetUp (each pod sync), so updated
// objects and refreshed tokens reach running pods. clusterTrustBundle
// sources are refused by name.
type Projected struct {
	// Objects reads ConfigMaps and Secrets; nil refuses such sources.
	Objects Objects
	// Tokens issues serviceAccountToken sources; nil refuses them.
	Tokens *Tokens
	// NodeAllocatable is what an unset limit reads as in downwardAPI
	// sources (see DownwardAPI); its memory bounds the tmpfs.
	NodeAllocatable func() v1.ResourceList
	// PodMemoryLimit bounds the tmpfs too (see EmptyDir).
	PodMemoryLimit func(pod *v1.Pod) int64
}

// Name is the kubelet's escaped plugin name.
func (Projected) Name() string { return "kubernetes.io~projected" }

// Supports reports a projected volume.
func (Projected) Supports(vol *v1.Volume) bool { return vol.Projected != nil }

// ReadOnly: projected volumes are mounted read-only.
func (Projected) ReadOnly() bool { return true }

// SetUp gathers every source's files (a later source's file of the same
// path wins) and writes them; errors name the source.
func (p Projected) SetUp(pod *v1.Pod, vol *v1.Volume, vd VolumeDir) (string, error) {
	src := vol.Projected
	mode := fileMode(src.DefaultMode, DefaultProjectedMode)
	all := map[string]File{}
	for i, s := range src.Sources {
		field := fmt.Sprintf("projected.sources[%d]", i)
		var files map[string]File
		var err error
		switch {
		case s.ConfigMap != nil:
			files, err = objectFiles(field+".configMap", s.ConfigMap.Name, s.ConfigMap.Items, mode, s.ConfigMap.Optional,
				configMapData(p.Objects, pod.Namespace, s.ConfigMap.Name))
		case s.Secret != nil:
			files, err = objectFiles(field+".secret", s.Secret.Name, s.Secret.Items, mode, s.Secret.Optional,
				secretData(p.Objects, pod.Namespace, s.Secret.Name))
		case s.DownwardAPI != nil:
			files, err = downwardFiles(pod, s.DownwardAPI.Items, mode, allocatable(p.NodeAllocatable), field+".downwardAPI")
		case s.ServiceAccountToken != nil:
			files, err = p.token(pod, s.ServiceAccountToken, mode, field+".serviceAccountToken")
		case s.ClusterTrustBundle != nil:
			err = fmt.Errorf("%s.clusterTrustBundle: Unsupported value: this node serves configMap, secret, downwardAPI and serviceAccountToken sources", field)
		default:
			err = fmt.Errorf("%s: Required value: one source", field)
		}
		if err != nil {
			return "", err
		}
		maps.Copy(all, files)
	}
	return writeVolume(pod, vd, all, memorySize(pod, nil, p.NodeAllocatable, p.PodMemoryLimit))
}

func (p Projected) token(pod *v1.Pod, src *v1.ServiceAccountTokenProjection, mode os.FileMode, field string) (map[string]File, error) {
	if p.Tokens == nil {
		return nil, fmt.Errorf("%s: %w", field, errNoAPIServer)
	}
	ctx, cancel := context.WithTimeout(context.Background(), getTimeout)
	defer cancel()
	tok, err := p.Tokens.Token(ctx, pod, src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	if podFSGroup(pod) != nil {
		mode = 0o600 // the kubelet's: group read comes from the fsGroup alone
	}
	return map[string]File{src.Path: {Data: []byte(tok), Mode: mode}}, nil
}

// TearDown unmounts the tmpfs.
func (Projected) TearDown(dir string) error { return unmountMemory(dir) }

// ForgetPod drops the pod's cached tokens; Manager.TearDown calls it.
func (p Projected) ForgetPod(uid types.UID) {
	if p.Tokens != nil {
		p.Tokens.ForgetPod(uid)
	}
}
