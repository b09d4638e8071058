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
	"sort"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
}

// Objects reads the CSI API objects attaching needs; csi/apiclient's
// Objects implements it.
type Objects interface {
	GetCSIDriver(ctx context.Context, name string) (*storagev1.CSIDriver, error)
	GetVolumeAttachment(ctx context.Context, name string) (*storagev1.VolumeAttachment, error)
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
	// external attacher attach it, for NodeName.
	Objects  Objects
	NodeName string
}

// Publish makes pv's volume available at target for pod.
func (v *Volumes) Publish(ctx context.Context, pod *v1.Pod, pv *v1.PersistentVolume, readOnly bool, target string) error {
	src := pv.Spec.CSI
	c, err := v.Drivers.Client(src.Driver)
	if err != nil {
		return err
	}
	vol := Volume{Handle: src.VolumeHandle, FSType: src.FSType, MountFlags: pv.Spec.MountOptions, AccessMode: accessMode(pv),
		ReadOnly: readOnly || src.ReadOnly, Context: src.VolumeAttributes}
	stage, err := c.StageUnstage(ctx)
	if err != nil {
		return fmt.Errorf("NodeGetCapabilities of CSI driver %s: %w", src.Driver, err)
	}
	data := volData{Driver: src.Driver, Handle: src.VolumeHandle}
	if vol.PublishContext, err = v.attached(ctx, src.Driver, src.VolumeHandle); err != nil {
		return err
	}
	if stage {
		if data.StagingPath, err = v.stage(ctx, c, vol, data); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return err
	}
	if err := writeVolData(filepath.Dir(target), data); err != nil {
		return err
	}
	if err := c.NodePublishVolume(ctx, vol, data.StagingPath, target); err != nil {
		return fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", pv.Name, err)
	}
	return nil
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
	c, err := v.Drivers.Client(data.Driver)
	if err != nil {
		return fmt.Errorf("UnmountVolume.TearDown: %w", err)
	}
	if err := c.NodeUnpublishVolume(ctx, data.Handle, target); err != nil {
		return fmt.Errorf("UnmountVolume.TearDown failed for volume %q: %w", data.Handle, err)
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

// accessMode is the kubelet's asCSIAccessMode of the PV's first mode.
func accessMode(pv *v1.PersistentVolume) csipb.VolumeCapability_AccessMode_Mode {
	if len(pv.Spec.AccessModes) == 0 {
		return csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	}
	switch pv.Spec.AccessModes[0] {
	case v1.ReadOnlyMany:
		return csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	case v1.ReadWriteMany:
		return csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	case v1.ReadWriteOncePod:
		return csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER
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

// AttachmentName is the VolumeAttachment of a CSI volume on a node (the
// attach-detach controller's name for it): csi-<sha256(handle, driver,
// node)>.
func AttachmentName(handle, driver, node string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(handle+driver+node)))
}

// attached is the kubelet's WaitForAttach, once (the sync is retried): a
// volume whose driver needs attaching waits until its VolumeAttachment
// says attached, and its attachment metadata is the publish context.
func (v *Volumes) attached(ctx context.Context, driver, handle string) (map[string]string, error) {
	if v.Objects == nil {
		return nil, nil
	}
	d, err := v.Objects.GetCSIDriver(ctx, driver)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("CSIDriver %s: %w", driver, err)
	case d.Spec.AttachRequired != nil && !*d.Spec.AttachRequired:
		return nil, nil
	}
	name := AttachmentName(handle, driver, v.NodeName)
	va, err := v.Objects.GetVolumeAttachment(ctx, name)
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
		// The Node authorizer lets a node read only the attachments of
		// its own: one not made yet is forbidden, not missing.
		return nil, fmt.Errorf("volume %s is not attached for volume attachment %s", handle, name)
	case err != nil:
		return nil, fmt.Errorf("volume attachment %s: %w", name, err)
	case va.DeletionTimestamp != nil:
		return nil, errors.New("volume attachment is being deleted")
	case va.Status.Attached:
		return va.Status.AttachmentMetadata, nil
	case va.Status.AttachError != nil:
		return nil, errors.New(va.Status.AttachError.Message)
	}
	return nil, fmt.Errorf("volume %s is not attached for volume attachment %s", handle, name)
}

// InUse are the node's status.volumesInUse of CSI: each volume a pod's
// record names (kubernetes.io/csi/<driver>^<handle>), sorted, so that
// the attach-detach controller does not detach it under the pod.
func (v *Volumes) InUse() []v1.UniqueVolumeName {
	if v.Published == nil {
		return nil
	}
	files, err := v.Published()
	if err != nil {
		return nil
	}
	seen := map[v1.UniqueVolumeName]bool{}
	for _, f := range files {
		if d, err := readVolData(f); err == nil {
			seen[v1.UniqueVolumeName("kubernetes.io/csi/"+d.Driver+"^"+d.Handle)] = true
		}
	}
	out := make([]v1.UniqueVolumeName, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
