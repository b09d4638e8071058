package csi

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// VolDataFile records, beside a published or staged volume, what undoing
// it needs (the kubelet's vol_data.json), so that it is undone after the
// agent restarted too.
const VolDataFile = "vol_data.json"

// volData is a VolDataFile's content.
type volData struct {
	Driver      string `json:"driverName"`
	Handle      string `json:"volumeHandle"`
	StagingPath string `json:"stagingPath,omitempty"`
	// Block: published as a block device (the target is a file).
	Block bool `json:"block,omitempty"`
	// Ephemeral: a pod's inline volume (not in the node's volumesInUse).
	Ephemeral bool `json:"ephemeral,omitempty"`
}

// Objects reads the API objects publishing needs (the CSIDriver, the
// VolumeAttachment, the PV's secrets); csi/apiclient's Objects implements
// it.
type Objects interface {
	GetCSIDriver(ctx context.Context, name string) (*storagev1.CSIDriver, error)
	GetVolumeAttachment(ctx context.Context, name string) (*storagev1.VolumeAttachment, error)
	GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// Drivers gives a registered driver's client; *Registry implements it.
type Drivers interface {
	Client(driver string) (*Client, error)
}

// Volumes stages and publishes CSI persistent volumes for pods, as the
// kubelet's CSI attacher (MountDevice: NodeStageVolume once per volume,
// under <root-dir>/plugins/kubernetes.io/csi/<driver>/<sha256 of the
// volume handle>/globalmount) and mounter (SetUp: NodePublishVolume per
// pod) do; package volume's PersistentVolumeClaim calls it for CSI PVs.
// A volume is unstaged once no pod publishes it any more.
type Volumes struct {
	Drivers Drivers
	// RootDir is the agent's --root-dir.
	RootDir string
	// Published lists the VolDataFiles of the volumes published now (the
	// volume manager's, to tell when a volume is no longer used).
	Published func() ([]string, error)
	// Objects, if set, makes a volume wait for its VolumeAttachment when
	// its driver needs attaching (no CSIDriver object, or one with
	// attachRequired): the attach-detach controller and the driver's
	// external attacher attach it, for NodeName. Without it, no driver
	// has a CSIDriver object and PVs' secrets cannot be read.
	Objects  Objects
	NodeName string

	// locks serialise the operations on one volume (driver and handle),
	// as the kubelet's nested pending operations do: a pod's publication
	// must not reuse a staging that a gone pod's teardown is unstaging.
	locksMu sync.Mutex
	locks   map[string]*volumeLock
}

type volumeLock struct {
	sync.Mutex
	users int
}

// lock takes the volume's lock; the returned func releases it.
func (v *Volumes) lock(driver, handle string) func() {
	key := driver + "^" + handle
	v.locksMu.Lock()
	if v.locks == nil {
		v.locks = map[string]*volumeLock{}
	}
	l := v.locks[key]
	if l == nil {
		l = &volumeLock{}
		v.locks[key] = l
	}
	l.users++
	v.locksMu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		v.locksMu.Lock()
		if l.users--; l.users == 0 {
			delete(v.locks, key)
		}
		v.locksMu.Unlock()
	}
}

// Publish makes pv's volume available at target for pod, as the
// kubelet's CSI plugin: it waits for the volume's attachment when the
// driver needs one, adds the pod's information to the volume context when
// the driver's CSIDriver asks (podInfoOnMount), passes the PV's stage and
// publish secrets, and the pod's fsGroup as the volume mount group to a
// driver with VOLUME_MOUNT_GROUP. fsGroup says whether the caller is to
// apply the pod's fsGroup to target itself (the kubelet's
// supportsFSGroup: the driver's fsGroupPolicy allows it and the driver
// does not take the group).
func (v *Volumes) Publish(ctx context.Context, pod *v1.Pod, pv *v1.PersistentVolume, readOnly bool, target string) (fsGroup bool, err error) {
	src := pv.Spec.CSI
	c, caps, driver, err := v.publisher(ctx, src.Driver, storagev1.VolumeLifecyclePersistent)
	if err != nil {
		return false, err
	}
	vol := Volume{Handle: src.VolumeHandle, FSType: src.FSType, MountFlags: pv.Spec.MountOptions, AccessMode: accessMode(pv, caps.SingleNodeMultiWriter),
		ReadOnly: readOnly || src.ReadOnly, Context: src.VolumeAttributes, Block: isBlock(pv)}
	group := podFSGroup(pod)
	if vol.Block {
		group = nil // a device has no ownership to set
	}
	if caps.VolumeMountGroup && group != nil {
		vol.MountGroup = strconv.FormatInt(*group, 10)
	}
	if driver != nil && driver.Spec.PodInfoOnMount != nil && *driver.Spec.PodInfoOnMount {
		vol.Context = podInfo(vol.Context, pod, false)
	}
	if vol.StageSecrets, err = v.secret(ctx, "NodeStageSecretRef", src.NodeStageSecretRef); err != nil {
		return false, err
	}
	if vol.PublishSecrets, err = v.secret(ctx, "NodePublishSecretRef", src.NodePublishSecretRef); err != nil {
		return false, err
	}
	data := volData{Driver: src.Driver, Handle: src.VolumeHandle, Block: vol.Block}
	defer v.lock(src.Driver, src.VolumeHandle)()
	if vol.PublishContext, err = v.attached(ctx, driver, src.Driver, src.VolumeHandle); err != nil {
		return false, err
	}
	if caps.StageUnstage {
		if data.StagingPath, err = v.stage(ctx, c, vol, data); err != nil {
			return false, err
		}
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return false, err
	}
	if err := writeVolData(filepath.Dir(target), data); err != nil {
		return false, err
	}
	if err := c.NodePublishVolume(ctx, vol, data.StagingPath, target); err != nil {
		return false, err
	}
	return !caps.VolumeMountGroup && supportsFSGroup(fsGroupPolicy(driver), src.FSType, pv.Spec.AccessModes, group, vol.ReadOnly), nil
}

// stage is MountDevice: NodeStageVolume unless the volume is staged.
func (v *Volumes) stage(ctx context.Context, c *Client, vol Volume, data volData) (string, error) {
	sum := sha256.Sum256([]byte(vol.Handle))
	dir := filepath.Join(v.RootDir, "plugins", "kubernetes.io", "csi", data.Driver, fmt.Sprintf("%x", sum))
	staging := filepath.Join(dir, "globalmount")
	if _, err := os.Stat(filepath.Join(dir, VolDataFile)); err == nil {
		return staging, nil
	}
	if err := os.MkdirAll(staging, 0o750); err != nil {
		return "", err
	}
	if err := c.NodeStageVolume(ctx, vol, staging); err != nil {
		return "", fmt.Errorf("MountVolume.MountDevice failed for volume %q : %w", vol.Handle, err)
	}
	return staging, writeVolData(dir, volData{Driver: data.Driver, Handle: data.Handle, StagingPath: staging})
}

// BlockTarget is the name a block volume's target must have: Unpublish
// tells the two targets a volume directory can hold by it.
const BlockTarget = "dev"

func isBlock(pv *v1.PersistentVolume) bool {
	return pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == v1.PersistentVolumeBlock
}

// Unpublish undoes Publish at target, from its VolDataFile, and unstages
// the volume when no other publication of it remains. A target without
// one was never published: nothing to do.
func (v *Volumes) Unpublish(ctx context.Context, target string) error {
	file := filepath.Join(filepath.Dir(target), VolDataFile)
	data, err := readVolData(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if data.Block != (filepath.Base(target) == BlockTarget) {
		return nil // the record is of the volume's other target
	}
	defer v.lock(data.Driver, data.Handle)()
	c, err := v.Drivers.Client(data.Driver)
	if err != nil {
		return fmt.Errorf("UnmountVolume.TearDown: %w", err)
	}
	if err := c.NodeUnpublishVolume(ctx, data.Handle, target); err != nil {
		return fmt.Errorf("UnmountVolume.TearDown failed for volume %q: %w", data.Handle, err)
	}
	if data.Block {
		// The driver bind-mounted the device on a file it made.
		if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := os.Remove(file); err != nil {
		return err
	}
	if data.StagingPath == "" || v.stillPublished(data) {
		return nil
	}
	if err := c.NodeUnstageVolume(ctx, data.Handle, data.StagingPath); err != nil {
		return fmt.Errorf("UnmountDevice failed for volume %q: %w", data.Handle, err)
	}
	return os.RemoveAll(filepath.Dir(data.StagingPath))
}

// stillPublished says whether another publication of data's volume is
// recorded (a listing that fails counts as yes: unstaging a volume in use
// would break it).
func (v *Volumes) stillPublished(data volData) bool {
	if v.Published == nil {
		return false
	}
	files, err := v.Published()
	if err != nil {
		return true
	}
	for _, f := range files {
		if d, err := readVolData(f); err == nil && d.Driver == data.Driver && d.Handle == data.Handle {
			return true
		}
	}
	return false
}

// accessMode is the CSI access mode of the PV's first access mode, as the
// kubelet maps it: ReadWriteOnce and ReadWriteOncePod are single-node
// writer, unless the driver has SINGLE_NODE_MULTI_WRITER, for which they
// are single-node multi-writer and single writer.
func accessMode(pv *v1.PersistentVolume, multiWriter bool) csipb.VolumeCapability_AccessMode_Mode {
	if len(pv.Spec.AccessModes) == 0 {
		return csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	}
	switch pv.Spec.AccessModes[0] {
	case v1.ReadOnlyMany:
		return csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	case v1.ReadWriteMany:
		return csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	case v1.ReadWriteOnce:
		if multiWriter {
			return csipb.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER
		}
	case v1.ReadWriteOncePod:
		if multiWriter {
			return csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER
		}
	}
	return csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
}

func writeVolData(dir string, d volData) error {
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, VolDataFile), b, 0o600)
}

func readVolData(file string) (volData, error) {
	var d volData
	b, err := os.ReadFile(file)
	if err != nil {
		return d, err
	}
	return d, json.Unmarshal(b, &d)
}

// Stats measures the volume published at target with the driver's
// NodeGetVolumeStats, as the kubelet's CSI metrics provider: capacity,
// available and used bytes, and inodes when the driver reports them.
// errors.ErrUnsupported when the driver has no GET_VOLUME_STATS.
func (v *Volumes) Stats(ctx context.Context, target string) (*statsapi.FsStats, error) {
	data, err := readVolData(filepath.Join(filepath.Dir(target), VolDataFile))
	if err != nil {
		return nil, err
	}
	c, caps, err := v.client(ctx, data.Driver)
	if err != nil {
		return nil, err
	}
	if !caps.GetVolumeStats {
		return nil, fmt.Errorf("CSI driver %s: no GET_VOLUME_STATS: %w", data.Driver, errors.ErrUnsupported)
	}
	now := metav1.Now()
	u, err := c.NodeGetVolumeStats(ctx, data.Handle, target, data.StagingPath)
	if err != nil {
		return nil, fmt.Errorf("NodeGetVolumeStats of volume %s: %w", data.Handle, err)
	}
	if u.Bytes == nil {
		return nil, fmt.Errorf("NodeGetVolumeStats of volume %s: no usage in bytes", data.Handle)
	}
	st := &statsapi.FsStats{Time: now, CapacityBytes: &u.Bytes.Total, AvailableBytes: &u.Bytes.Available, UsedBytes: &u.Bytes.Used}
	if u.Inodes != nil {
		st.Inodes, st.InodesFree, st.InodesUsed = &u.Inodes.Total, &u.Inodes.Available, &u.Inodes.Used
	}
	return st, nil
}
