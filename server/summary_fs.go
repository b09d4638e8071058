package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodekit-dev/nodekit/internal/fsstats"
	"github.com/nodekit-dev/nodekit/podpath"
)

// VolumeStatsProvider measures a pod's volumes for its VolumeStats;
// *volume.Manager implements it. The volumes it could not measure are left
// out of the summary (the error does not fail it, as with the kubelet).
type VolumeStatsProvider interface {
	PodVolumeStats(pod *v1.Pod) ([]statsapi.VolumeStats, error)
}

// ImageFsInfoProvider is the CRI call the summary reads the image
// filesystem's usage from; *runtime.Client implements it.
type ImageFsInfoProvider interface {
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
}

// fsReader reads the filesystems for one summary: each one statfs'd once.
type fsReader struct {
	layout *podpath.Layout
	now    metav1.Time
	root   *fsstats.Fs            // --root-dir's; nil without a layout
	mounts map[string]*fsstats.Fs // the runtime's mountpoints; nil: not on this node
}

func newFsReader(layout *podpath.Layout, now metav1.Time) (*fsReader, error) {
	r := &fsReader{layout: layout, now: now, mounts: map[string]*fsstats.Fs{}}
	if layout != nil {
		root, err := fsstats.Statfs(layout.Root())
		if err != nil {
			return nil, fmt.Errorf("node filesystem (--root-dir): %w", err)
		}
		r.root = &root
	}
	return r, nil
}

// nodeFs is the kubelet's RootFsStats: statfs of --root-dir.
func (r *fsReader) nodeFs() *statsapi.FsStats {
	if r.root == nil {
		return nil
	}
	out := capacity(*r.root, r.now)
	out.UsedBytes, out.InodesUsed = ptr(r.root.Used), ptr(r.root.InodesUsed())
	return out
}

// runtimeFs is the CRI stats provider's ImageFsStats: the first image
// filesystem CRI reports, also given as the containers' filesystem (the
// kubelet's CRI stats provider does not report a separate one).
func (r *fsReader) runtimeFs(ctx context.Context, images ImageFsInfoProvider) (*statsapi.RuntimeStats, error) {
	resp, err := images.ImageFsInfo(ctx)
	if err != nil {
		return nil, fmt.Errorf("image filesystem info: %w", err)
	}
	fss := resp.GetImageFilesystems()
	if len(fss) == 0 {
		return nil, errors.New("image filesystem info: the runtime reports no image filesystem")
	}
	imageFs, err := r.usage(fss[0])
	if err != nil {
		return nil, fmt.Errorf("image filesystem: %w", err)
	}
	return &statsapi.RuntimeStats{ImageFs: imageFs, ContainerFs: imageFs}, nil
}

// usage turns a CRI filesystem usage (an image filesystem, a container's
// writable layer) into FsStats: the bytes and inodes the runtime reports,
// the size of the filesystem at its mountpoint when that is on this node.
func (r *fsReader) usage(u *runtimeapi.FilesystemUsage) (*statsapi.FsStats, error) {
	if u == nil {
		return nil, nil
	}
	t := r.now
	if ts := u.GetTimestamp(); ts != 0 {
		t = metav1.NewTime(time.Unix(0, ts))
	}
	out := &statsapi.FsStats{Time: t}
	size, err := r.mount(u.GetFsId().GetMountpoint())
	if err != nil {
		return nil, err
	}
	if size != nil {
		out = capacity(*size, t)
	}
	if v := u.GetUsedBytes(); v != nil {
		out.UsedBytes = ptr(v.Value)
	}
	if v := u.GetInodesUsed(); v != nil {
		out.InodesUsed = ptr(v.Value)
	}
	return out, nil
}

// mount reads the filesystem at a runtime's mountpoint once; nil when
// there is none or it is not on this node.
func (r *fsReader) mount(path string) (*fsstats.Fs, error) {
	if path == "" {
		return nil, nil
	}
	if size, ok := r.mounts[path]; ok {
		return size, nil
	}
	var out *fsstats.Fs
	st, err := fsstats.Statfs(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		out = &st
	}
	r.mounts[path] = out
	return out, nil
}

// logs is the kubelet's log usage: the files directly in dir (a pod's, or
// one of its containers' log directory), on --root-dir's filesystem as
// the kubelet sizes them (cAdvisor's RootFsInfo). nil when dir is missing
// or unreadable.
func (r *fsReader) logs(pod *v1.Pod, container string) *statsapi.FsStats {
	if r.root == nil {
		return nil
	}
	dir, err := r.layout.PodLogsDirectory(pod.Namespace, pod.Name, pod.UID)
	if err == nil && container != "" {
		dir, err = podpath.Join(dir, container)
	}
	if err != nil {
		return nil
	}
	u, err := fsstats.FilesUsage(dir)
	if err != nil {
		return nil
	}
	out := capacity(*r.root, r.now)
	out.UsedBytes, out.InodesUsed = ptr(u.Bytes), ptr(u.Inodes)
	return out
}

// ephemeral is the kubelet's calcEphemeralStorage for its CRI stats
// provider: the containers' writable layers and logs, the pod's local
// ephemeral volumes (emptyDir on disk, configMap, gitRepo) and the files
// directly in its log directory, on --root-dir's filesystem.
func (r *fsReader) ephemeral(pod *v1.Pod, ps *statsapi.PodStats) *statsapi.FsStats {
	out := capacity(*r.root, r.now)
	add := func(st *statsapi.FsStats) {
		if st != nil {
			out.UsedBytes = addUsage(out.UsedBytes, st.UsedBytes)
			out.InodesUsed = addUsage(out.InodesUsed, st.InodesUsed)
		}
	}
	for i := range ps.Containers {
		add(ps.Containers[i].Rootfs)
		add(ps.Containers[i].Logs)
	}
	for i := range ps.VolumeStats {
		if localEphemeral(pod, ps.VolumeStats[i].Name) {
			add(&ps.VolumeStats[i].FsStats)
		}
	}
	add(r.logs(pod, ""))
	return out
}

// localEphemeral is the kubelet's IsLocalEphemeralVolume of pod's volume
// name.
func localEphemeral(pod *v1.Pod, name string) bool {
	for i := range pod.Spec.Volumes {
		if v := &pod.Spec.Volumes[i]; v.Name == name {
			return v.GitRepo != nil || v.ConfigMap != nil || (v.EmptyDir != nil && v.EmptyDir.Medium == v1.StorageMediumDefault)
		}
	}
	return false
}

// capacity is FsStats with a filesystem's size and no usage.
func capacity(size fsstats.Fs, t metav1.Time) *statsapi.FsStats {
	return &statsapi.FsStats{Time: t, AvailableBytes: &size.Available, CapacityBytes: &size.Capacity,
		Inodes: &size.Inodes, InodesFree: &size.InodesFree}
}

// addUsage is the kubelet's: nil when neither is set.
func addUsage(a, b *uint64) *uint64 {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return ptr(*a + *b)
}
