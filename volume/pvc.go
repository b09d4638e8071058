package volume

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/storage/ephemeral"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodekit-dev/nodekit/internal/fsstats"
)

// ClaimObjects reads persistent volume claims and the volumes bound to
// them; volume/apiclient's Objects implements it.
type ClaimObjects interface {
	GetPersistentVolumeClaim(ctx context.Context, namespace, name string) (*v1.PersistentVolumeClaim, error)
	GetPersistentVolume(ctx context.Context, name string) (*v1.PersistentVolume, error)
}

// CSIVolumes stages and publishes CSI persistent volumes; *csi.Volumes
// implements it.
type CSIVolumes interface {
	// Publish makes pv's volume available for pod at target, a directory
	// it creates (read-only with readOnly).
	// fsGroup says whether the caller is to apply the pod's fsGroup (the
	// driver's fsGroupPolicy).
	Publish(ctx context.Context, pod *v1.Pod, pv *v1.PersistentVolume, readOnly bool, target string) (fsGroup bool, err error)
	// Unpublish undoes Publish at target, from what Publish recorded
	// beside it (also after a restart); nothing when nothing was.
	Unpublish(ctx context.Context, target string) error
	// Stats measures the volume published at target (NodeGetVolumeStats);
	// errors.ErrUnsupported when its driver does not tell.
	Stats(ctx context.Context, target string) (*statsapi.FsStats, error)
	// Expand grows pv's volume published at target to size bytes on the
	// node; errors.ErrUnsupported when its driver needs nothing done.
	Expand(ctx context.Context, pv *v1.PersistentVolume, target string, size int64) error
}

// pvcProtectionFinalizer keeps a claim in use from going (the API's
// kubernetes.io/pvc-protection).
const pvcProtectionFinalizer = "kubernetes.io/pvc-protection"

// PersistentVolumeClaim serves persistentVolumeClaim volumes, and generic
// ephemeral volumes (the claim <pod>-<volume> the ephemeral volume
// controller makes, owned by the pod: ClaimName), whose claim is bound to
// a local, a hostPath or a CSI persistent volume, as the kubelet's volume
// manager and its local-volume, host-path and CSI plugins do:
//
//   - the claim must be bound (status Bound, spec.volumeName), not being
//     deleted without kubernetes.io/pvc-protection, and its volume's
//     claimRef must name it (by UID): else the kubelet's "error processing
//     PVC <ns>/<name>: ..." errors, and the pod waits;
//
//   - the volume's node affinity must match the node (Node): "no matching
//     NodeSelectorTerms";
//
//   - a local volume is bind-mounted (read-only with the claim's readOnly)
//     on the volume's directory below the pod's, its ownership set to the
//     pod's fsGroup unless read-only; TearDown unmounts it;
//
//   - a hostPath volume is mounted from its path directly, after the
//     path's type check (CheckHostPath);
//
//   - a CSI volume is staged and published by CSI (the volume's "mount"
//     directory is its target), unpublished by TearDown; once published,
//     each SetUp reads its claim and PV again for an online expansion
//     (see expand).
//
//   - a CSI volume of volumeMode Block is published as a device on the
//     file "dev" in the volume's directory, which containers get through
//     volumeDevices (IsDevice).
//
// Other volume types (nfs, ...), CSI without CSI, and block mode of
// anything but CSI are refused with an error naming them. A claim resolved once is not read
// again for the pod's life, but for expansion.
type PersistentVolumeClaim struct {
	Objects ClaimObjects
	// Node is the node the pods run on, for a volume's node affinity; nil
	// checks none.
	Node func() (*v1.Node, error)
	// CSI serves CSI volumes; nil refuses them.
	CSI CSIVolumes
	// Recorder, if set, gets the FileSystemResize events of expansions.
	Recorder EventRecorder

	mu       sync.Mutex
	resolved map[types.UID]map[string]*v1.PersistentVolume // pod UID → volume name → PV
}

// Name is the local-volume plugin's: local volumes are mounted below it.
func (*PersistentVolumeClaim) Name() string { return "kubernetes.io~local-volume" }

// Supports reports a persistentVolumeClaim volume.
func (*PersistentVolumeClaim) Supports(vol *v1.Volume) bool {
	return vol.PersistentVolumeClaim != nil || vol.Ephemeral != nil
}

// ClaimName is the claim a volume uses: a persistentVolumeClaim's, or
// for a generic ephemeral volume the one the ephemeral volume controller
// makes for the pod (<pod>-<volume>); "" for other volumes.
func ClaimName(pod *v1.Pod, vol *v1.Volume) string {
	switch {
	case vol.PersistentVolumeClaim != nil:
		return vol.PersistentVolumeClaim.ClaimName
	case vol.Ephemeral != nil:
		return ephemeral.VolumeClaimName(pod, vol)
	}
	return ""
}

// claimReadOnly: the claim is mounted read-only (a persistentVolumeClaim's
// readOnly; an ephemeral volume's claim never is).
func claimReadOnly(vol *v1.Volume) bool {
	return vol.PersistentVolumeClaim != nil && vol.PersistentVolumeClaim.ReadOnly
}

// SetUp resolves the claim and sets its volume up.
func (p *PersistentVolumeClaim) SetUp(pod *v1.Pod, vol *v1.Volume, vd VolumeDir) (string, error) {
	pv, err := p.volume(pod, vol)
	if err != nil {
		return "", err
	}
	readOnly := claimReadOnly(vol)
	switch src := pv.Spec.PersistentVolumeSource; {
	case block(pv) && (src.CSI == nil || p.CSI == nil):
		return "", fmt.Errorf("persistent volume %s: volumeMode Block is supported for CSI volumes only on this node", pv.Name)
	case src.HostPath != nil:
		if err := CheckHostPath(&v1.HostPathVolumeSource{Path: src.HostPath.Path, Type: src.HostPath.Type}); err != nil {
			return "", fmt.Errorf("persistent volume %s: %w", pv.Name, err)
		}
		return src.HostPath.Path, nil
	case src.Local != nil:
		return p.mountLocal(pod, pv, src.Local.Path, readOnly, vd)
	case src.CSI != nil && p.CSI != nil:
		target := filepath.Join(vd.Path(), csiTarget(pv))
		if mnt.isMountPoint(target) {
			return target, p.expand(pod, vol, target)
		}
		if _, err := vd.Create(0o750); err != nil {
			return "", err
		}
		return target, p.publishCSI(pod, pv, readOnly, target)
	}
	return "", fmt.Errorf("persistent volume %s: its type is not supported on this node (local, hostPath and, with CSI, csi are)", pv.Name)
}

// publishCSI publishes a CSI volume and applies the pod's fsGroup when
// the driver leaves it to the node; a volume whose ownership cannot be
// set is unpublished again (the next try starts over).
func (p *PersistentVolumeClaim) publishCSI(pod *v1.Pod, pv *v1.PersistentVolume, readOnly bool, target string) error {
	ctx, cancel := context.WithTimeout(context.Background(), csiTimeout)
	defer cancel()
	fsGroup, err := p.CSI.Publish(ctx, pod, pv, readOnly, target)
	if err != nil || !fsGroup {
		return err
	}
	if err := SetVolumeOwnership(target, podFSGroup(pod), fsGroupChangePolicy(pod), false); err != nil {
		return errors.Join(fmt.Errorf("applyFSGroup failed for vol %s: %w", pv.Spec.CSI.VolumeHandle, err),
			p.CSI.Unpublish(ctx, target))
	}
	return nil
}

// VolumeStats measures a claim's volume as the kubelet's plugins do: a
// local PV by statfs of its mount (MetricsStatFS), a CSI PV by its
// driver; a hostPath PV has none (errors.ErrUnsupported).
func (p *PersistentVolumeClaim) VolumeStats(pod *v1.Pod, vol *v1.Volume, vd VolumeDir) (*statsapi.FsStats, error) {
	p.mu.Lock()
	pv := p.resolved[pod.UID][vol.Name]
	p.mu.Unlock()
	switch {
	case pv == nil:
		return nil, fs.ErrNotExist // not set up (yet)
	case pv.Spec.Local != nil:
		if !mnt.isMountPoint(vd.Path()) {
			return nil, fs.ErrNotExist
		}
		now := metav1.Now()
		sf, err := fsstats.Statfs(vd.Path())
		if err != nil {
			return nil, err
		}
		used := sf.InodesUsed()
		return &statsapi.FsStats{Time: now, AvailableBytes: &sf.Available, CapacityBytes: &sf.Capacity, UsedBytes: &sf.Used,
			Inodes: &sf.Inodes, InodesFree: &sf.InodesFree, InodesUsed: &used}, nil
	case pv.Spec.CSI != nil && p.CSI != nil:
		target := filepath.Join(vd.Path(), csiTarget(pv))
		if !mnt.isMountPoint(target) {
			return nil, fs.ErrNotExist
		}
		ctx, cancel := context.WithTimeout(context.Background(), getTimeout)
		defer cancel()
		return p.CSI.Stats(ctx, target)
	}
	return nil, errors.ErrUnsupported
}

// mountLocal bind-mounts a local volume's path on the volume's directory,
// once.
func (p *PersistentVolumeClaim) mountLocal(pod *v1.Pod, pv *v1.PersistentVolume, path string, readOnly bool, vd VolumeDir) (string, error) {
	if mnt.isMountPoint(vd.Path()) {
		return vd.Path(), nil
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("persistent volume %s: local path: %w", pv.Name, err)
	}
	dir, err := vd.Create(0o750)
	if err != nil {
		return "", err
	}
	if err := mnt.bindMount(path, dir, readOnly); err != nil {
		return "", fmt.Errorf("persistent volume %s: mounting %s on %s: %w", pv.Name, path, dir, err)
	}
	if !readOnly {
		if err := SetVolumeOwnership(dir, podFSGroup(pod), fsGroupChangePolicy(pod), false); err != nil {
			return "", fmt.Errorf("fsGroup: %w", err)
		}
	}
	return dir, nil
}

// volume is the persistent volume vol's claim is bound to, checked as the
// kubelet's desired state populator and mount operation check it.
func (p *PersistentVolumeClaim) volume(pod *v1.Pod, vol *v1.Volume) (*v1.PersistentVolume, error) {
	p.mu.Lock()
	pv := p.resolved[pod.UID][vol.Name]
	p.mu.Unlock()
	if pv != nil {
		return pv, nil
	}
	claim := ClaimName(pod, vol)
	pvcErr := func(err error) error { return fmt.Errorf("error processing PVC %s/%s: %w", pod.Namespace, claim, err) }
	ctx, cancel := context.WithTimeout(context.Background(), getTimeout)
	defer cancel()
	pvc, err := p.Objects.GetPersistentVolumeClaim(ctx, pod.Namespace, claim)
	switch {
	case err != nil:
		return nil, transient(pvcErr(fmt.Errorf("failed to fetch PVC from API server: %w", err)))
	case vol.Ephemeral != nil && ephemeral.VolumeIsForPod(pod, pvc) != nil:
		// Not the ephemeral volume controller's claim for this pod, but
		// one of the same name made by someone else.
		return nil, ephemeral.VolumeIsForPod(pod, pvc)
	case pvc.DeletionTimestamp != nil && !slices.Contains(pvc.Finalizers, pvcProtectionFinalizer):
		return nil, pvcErr(errors.New("PVC is being deleted"))
	case pvc.Status.Phase != v1.ClaimBound:
		return nil, pvcErr(errors.New("PVC is not bound"))
	case pvc.Spec.VolumeName == "":
		return nil, pvcErr(errors.New("PVC has empty pvc.Spec.VolumeName"))
	}
	pv, err = p.Objects.GetPersistentVolume(ctx, pvc.Spec.VolumeName)
	switch {
	case err != nil:
		return nil, transient(pvcErr(fmt.Errorf("failed to fetch PV %s from API server: %w", pvc.Spec.VolumeName, err)))
	case pv.Spec.ClaimRef == nil:
		return nil, pvcErr(fmt.Errorf("found PV object %s but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim", pv.Name))
	case pv.Spec.ClaimRef.UID != pvc.UID:
		return nil, pvcErr(fmt.Errorf("found PV object %s but its pv.Spec.ClaimRef.UID %s does not point to claim.UID %s", pv.Name, pv.Spec.ClaimRef.UID, pvc.UID))
	}
	if err := p.nodeAffinity(pv); err != nil {
		return nil, fmt.Errorf("MountVolume.NodeAffinity check failed for volume %q : %w", vol.Name, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resolved == nil {
		p.resolved = map[types.UID]map[string]*v1.PersistentVolume{}
	}
	if p.resolved[pod.UID] == nil {
		p.resolved[pod.UID] = map[string]*v1.PersistentVolume{}
	}
	p.resolved[pod.UID][vol.Name] = pv
	return pv, nil
}

// nodeAffinity is the kubelet's CheckNodeAffinity.
func (p *PersistentVolumeClaim) nodeAffinity(pv *v1.PersistentVolume) error {
	if p.Node == nil || pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return nil
	}
	node, err := p.Node()
	if err != nil {
		return err
	}
	ok, err := corev1helpers.MatchNodeSelectorTerms(node, pv.Spec.NodeAffinity.Required)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("no matching NodeSelectorTerms")
	}
	return nil
}

// csiTargetDir is a CSI volume's target below its directory (the
// kubelet's "mount"); csiTimeout bounds its CSI calls.
const (
	csiTargetDir    = "mount"
	csiTargetDevice = "dev" // csi.BlockTarget
	csiTimeout      = 2 * time.Minute
)

// csiTarget is where a CSI volume is published in its volume directory:
// the mount directory, or for a block volume the device file (the
// kubelet publishes those under plugins/kubernetes.io/csi/volumeDevices/
// and links them from the pod's volumeDevices/ directory; one place per
// volume is enough here).
func csiTarget(pv *v1.PersistentVolume) string {
	if block(pv) {
		return csiTargetDevice
	}
	return csiTargetDir
}

func block(pv *v1.PersistentVolume) bool {
	return pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == v1.PersistentVolumeBlock
}

// IsDevice says whether the claim's volume is a block device.
func (p *PersistentVolumeClaim) IsDevice(pod *v1.Pod, vol *v1.Volume) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	pv := p.resolved[pod.UID][vol.Name]
	return pv != nil && block(pv)
}

// TearDown unpublishes a CSI volume and unmounts a local volume's bind
// mount.
func (p *PersistentVolumeClaim) TearDown(dir string) error {
	if p.CSI != nil {
		ctx, cancel := context.WithTimeout(context.Background(), csiTimeout)
		defer cancel()
		for _, target := range []string{csiTargetDir, csiTargetDevice} {
			if err := p.CSI.Unpublish(ctx, filepath.Join(dir, target)); err != nil {
				return err
			}
		}
	}
	if mnt.isMountPoint(dir) {
		if err := mnt.unmount(dir); err != nil {
			return fmt.Errorf("unmounting %s: %w", dir, err)
		}
	}
	return nil
}

// ForgetPod drops what was resolved for the pod.
func (p *PersistentVolumeClaim) ForgetPod(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.resolved, uid)
}
