package csi_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/csi"
	"github.com/nodekit-dev/nodekit/csi/csitest"
)

// objects is a csi.Objects in memory.
type objects struct {
	driver     *storagev1.CSIDriver
	attachment *storagev1.VolumeAttachment
	forbidden  bool
	secrets    map[string]*v1.Secret // namespace/name
}

func (o *objects) GetSecret(_ context.Context, namespace, name string) (*v1.Secret, error) {
	if s := o.secrets[namespace+"/"+name]; s != nil {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func (o *objects) GetCSIDriver(context.Context, string) (*storagev1.CSIDriver, error) {
	if o.driver == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "storage.k8s.io", Resource: "csidrivers"}, "x")
	}
	return o.driver, nil
}

func (o *objects) GetVolumeAttachment(_ context.Context, name string) (*storagev1.VolumeAttachment, error) {
	gr := schema.GroupResource{Group: "storage.k8s.io", Resource: "volumeattachments"}
	switch {
	case o.forbidden:
		return nil, apierrors.NewForbidden(gr, name, nil)
	case o.attachment == nil:
		return nil, apierrors.NewNotFound(gr, name)
	}
	return o.attachment, nil
}

// startDriver serves a fake driver (no DataDir: publish makes the
// target, no root needed) and registers it.
func startDriver(t *testing.T, cfg csitest.Config) (*csitest.Driver, *csi.Registry) {
	dir, err := os.MkdirTemp("", "csi") // short: a socket's path has 107 bytes at most
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfg.Name, cfg.RegistryDir, cfg.EndpointDir, cfg.NodeID = "fake.csi.example.com", filepath.Join(dir, "reg"), filepath.Join(dir, "fake"), "node-1"
	d, err := csitest.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(d.Stop)
	reg := csi.NewRegistry(csi.RegistryConfig{})
	t.Cleanup(func() { reg.Close() })
	require.NoError(t, reg.RegisterPlugin(context.Background(), "fake.csi.example.com", d.Endpoint(), []string{"1.0.0"}))
	return d, reg
}

func csiPV(src v1.CSIPersistentVolumeSource, modes ...v1.PersistentVolumeAccessMode) *v1.PersistentVolume {
	src.Driver, src.VolumeHandle = "fake.csi.example.com", "vol-1"
	return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}, Spec: v1.PersistentVolumeSpec{AccessModes: modes,
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &src}}}
}

// TestPublishWaitsForTheAttachment: the kubelet's WaitForAttach, once per
// try; a volume not attached yet is a pending NotAttachedError. Nothing is
// published before the volume is attached.
func TestPublishWaitsForTheAttachment(t *testing.T) {
	name := csi.AttachmentName("vol-1", "fake.csi.example.com", "node-1")
	notAttached := "volume vol-1 is not attached for volume attachment " + name
	for _, tc := range []struct {
		name    string
		objs    *objects
		err     string
		pending bool
	}{
		{"no CSIDriver, no attachment yet", &objects{}, notAttached, true},
		{"forbidden: not the node's yet", &objects{forbidden: true}, notAttached, true},
		{"attaching", &objects{attachment: &storagev1.VolumeAttachment{}}, notAttached, true},
		{"attach failed", &objects{attachment: &storagev1.VolumeAttachment{Status: storagev1.VolumeAttachmentStatus{
			AttachError: &storagev1.VolumeError{Message: "rpc error: disk busy"}}}}, "rpc error: disk busy", false},
		{"being deleted", &objects{attachment: &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &metav1.Time{}}}},
			"volume attachment is being deleted", false},
		{"attached", &objects{attachment: &storagev1.VolumeAttachment{Status: storagev1.VolumeAttachmentStatus{Attached: true}}}, "", false},
		{"no attach needed", &objects{driver: &storagev1.CSIDriver{Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}}}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, reg := startDriver(t, csitest.Config{})
			vols := &csi.Volumes{Drivers: reg, RootDir: t.TempDir(), Objects: tc.objs, NodeName: "node-1"}
			target := filepath.Join(t.TempDir(), "mount")
			_, err := vols.Publish(context.Background(), &v1.Pod{}, csiPV(v1.CSIPersistentVolumeSource{}), false, target)
			if tc.err == "" {
				require.NoError(t, err)
				assert.Equal(t, []string{"publish vol-1"}, d.Calls())
				return
			}
			require.ErrorContains(t, err, tc.err)
			var na *csi.NotAttachedError
			assert.Equal(t, tc.pending, errors.As(err, &na) && na.Pending())
			assert.Empty(t, d.Calls())
			_, statErr := os.Stat(filepath.Join(filepath.Dir(target), csi.VolDataFile))
			assert.ErrorIs(t, statErr, fs.ErrNotExist, "nothing recorded before it is attached")
		})
	}
}

// TestPublishAsTheCSIDriverSays: the kubelet's CSI mounter. podInfoOnMount
// adds the pod to the volume context; the PV's publish secret reaches the
// driver; the pod's fsGroup is the caller's to apply as fsGroupPolicy
// says (supportsFSGroup), or the driver's when it has VOLUME_MOUNT_GROUP.
func TestPublishAsTheCSIDriverSays(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: "ns", UID: "uid-1"},
		Spec: v1.PodSpec{ServiceAccountName: "sa", SecurityContext: &v1.PodSecurityContext{FSGroup: ptr.To[int64](2000)}}}
	noGroup := &v1.Pod{ObjectMeta: pod.ObjectMeta}
	policy := func(p storagev1.FSGroupPolicy) *storagev1.CSIDriver {
		return &storagev1.CSIDriver{Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false), FSGroupPolicy: &p}}
	}
	unset := &storagev1.CSIDriver{Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}}
	rwo, rwx := v1.ReadWriteOnce, v1.ReadWriteMany
	for _, tc := range []struct {
		name       string
		driver     *storagev1.CSIDriver
		mountGroup bool
		pod        *v1.Pod
		src        v1.CSIPersistentVolumeSource
		modes      []v1.PersistentVolumeAccessMode
		readOnly   bool
		fsGroup    bool
		wantGroup  string
	}{
		{name: "File", driver: policy(storagev1.FileFSGroupPolicy), pod: pod, modes: []v1.PersistentVolumeAccessMode{rwx}, fsGroup: true},
		{name: "File, read-only", driver: policy(storagev1.FileFSGroupPolicy), pod: pod, readOnly: true},
		{name: "File, no fsGroup", driver: policy(storagev1.FileFSGroupPolicy), pod: noGroup},
		{name: "None", driver: policy(storagev1.NoneFSGroupPolicy), pod: pod, src: v1.CSIPersistentVolumeSource{FSType: "ext4"}, modes: []v1.PersistentVolumeAccessMode{rwo}},
		{name: "default policy, ext4 RWO", driver: unset, pod: pod, src: v1.CSIPersistentVolumeSource{FSType: "ext4"}, modes: []v1.PersistentVolumeAccessMode{rwo}, fsGroup: true},
		{name: "default policy, no fsType", driver: unset, pod: pod, modes: []v1.PersistentVolumeAccessMode{rwo}},
		{name: "default policy, ext4 RWX", driver: unset, pod: pod, src: v1.CSIPersistentVolumeSource{FSType: "ext4"}, modes: []v1.PersistentVolumeAccessMode{rwx}},
		{name: "VOLUME_MOUNT_GROUP: the driver's", driver: policy(storagev1.FileFSGroupPolicy), mountGroup: true, pod: pod, wantGroup: "2000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, reg := startDriver(t, csitest.Config{VolumeMountGroup: tc.mountGroup})
			vols := &csi.Volumes{Drivers: reg, RootDir: t.TempDir(), Objects: &objects{driver: tc.driver}, NodeName: "node-1"}
			fsGroup, err := vols.Publish(context.Background(), tc.pod, csiPV(tc.src, tc.modes...), tc.readOnly, filepath.Join(t.TempDir(), "mount"))
			require.NoError(t, err)
			assert.Equal(t, tc.fsGroup, fsGroup)
			assert.Equal(t, tc.wantGroup, d.PublishRequest("vol-1").GetVolumeCapability().GetMount().GetVolumeMountGroup())
		})
	}

	// The kubelet's access modes: RWO and RWOP are single-node writer
	// unless the driver tells them apart (SINGLE_NODE_MULTI_WRITER).
	for _, tc := range []struct {
		mode        v1.PersistentVolumeAccessMode
		multiWriter bool
		want        csipb.VolumeCapability_AccessMode_Mode
	}{
		{v1.ReadWriteOnce, false, csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		{v1.ReadWriteOncePod, false, csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		{v1.ReadWriteOnce, true, csipb.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER},
		{v1.ReadWriteOncePod, true, csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER},
		{v1.ReadWriteMany, true, csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER},
		{v1.ReadOnlyMany, false, csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY},
	} {
		t.Run(fmt.Sprintf("%s, multi-writer %v", tc.mode, tc.multiWriter), func(t *testing.T) {
			d, reg := startDriver(t, csitest.Config{SingleNodeMultiWriter: tc.multiWriter})
			vols := &csi.Volumes{Drivers: reg, RootDir: t.TempDir(), Objects: &objects{driver: unset}, NodeName: "node-1"}
			_, err := vols.Publish(context.Background(), pod, csiPV(v1.CSIPersistentVolumeSource{}, tc.mode), false, filepath.Join(t.TempDir(), "mount"))
			require.NoError(t, err)
			assert.Equal(t, tc.want, d.PublishRequest("vol-1").GetVolumeCapability().GetAccessMode().GetMode())
		})
	}

	t.Run("podInfoOnMount and secrets", func(t *testing.T) {
		d, reg := startDriver(t, csitest.Config{})
		objs := &objects{driver: &storagev1.CSIDriver{Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false), PodInfoOnMount: ptr.To(true)}},
			secrets: map[string]*v1.Secret{"kube-system/creds": {Data: map[string][]byte{"key": []byte("s3cret")}}}}
		vols := &csi.Volumes{Drivers: reg, RootDir: t.TempDir(), Objects: objs, NodeName: "node-1"}
		src := v1.CSIPersistentVolumeSource{VolumeAttributes: map[string]string{"size": "1Gi"},
			NodePublishSecretRef: &v1.SecretReference{Namespace: "kube-system", Name: "creds"}}
		_, err := vols.Publish(context.Background(), pod, csiPV(src), false, filepath.Join(t.TempDir(), "mount"))
		require.NoError(t, err)
		r := d.PublishRequest("vol-1")
		assert.Equal(t, map[string]string{"size": "1Gi", "csi.storage.k8s.io/pod.name": "db-0", "csi.storage.k8s.io/pod.namespace": "ns",
			"csi.storage.k8s.io/pod.uid": "uid-1", "csi.storage.k8s.io/serviceAccount.name": "sa", "csi.storage.k8s.io/ephemeral": "false"},
			r.GetVolumeContext())
		assert.Equal(t, map[string]string{"key": "s3cret"}, r.GetSecrets())
		assert.Equal(t, map[string]string{"size": "1Gi"}, src.VolumeAttributes, "the PV is not changed")

		src.NodePublishSecretRef.Name = "missing"
		_, err = vols.Publish(context.Background(), pod, csiPV(src), false, filepath.Join(t.TempDir(), "mount"))
		require.ErrorContains(t, err, `fetching NodePublishSecretRef kube-system/missing failed: secrets "missing" not found`)
	})
}

// TestPublishInline: the kubelet's CSI mounter for a pod's inline
// ephemeral volume: only where the CSIDriver lists Ephemeral; the handle
// InlineHandle, no staging, the pod's information with ephemeral "true",
// the publish secret from the pod's namespace; not in volumesInUse.
func TestPublishInline(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1"}, Spec: v1.PodSpec{ServiceAccountName: "sa"}}
	vol := &v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: "fake.csi.example.com",
		VolumeAttributes: map[string]string{"size": "1Mi"}, NodePublishSecretRef: &v1.LocalObjectReference{Name: "creds"}}}}
	for _, tc := range []struct {
		name   string
		driver *storagev1.CSIDriver
		err    string
	}{
		{"no CSIDriver", nil, `volume mode "Ephemeral" not supported by driver fake.csi.example.com (no CSIDriver object)`},
		{"persistent only", &storagev1.CSIDriver{}, `volume mode "Ephemeral" not supported by driver fake.csi.example.com (only supports ["Persistent"])`},
		{"ephemeral", &storagev1.CSIDriver{Spec: storagev1.CSIDriverSpec{PodInfoOnMount: ptr.To(true),
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral}}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, reg := startDriver(t, csitest.Config{})
			published := filepath.Join(t.TempDir(), "scratch")
			vols := &csi.Volumes{Drivers: reg, RootDir: t.TempDir(), NodeName: "node-1", Objects: &objects{driver: tc.driver,
				secrets: map[string]*v1.Secret{"ns/creds": {Data: map[string][]byte{"k": []byte("v")}}}},
				Published: func() ([]string, error) { return []string{filepath.Join(published, csi.VolDataFile)}, nil }}
			_, err := vols.PublishInline(context.Background(), pod, vol, filepath.Join(published, "mount"))
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				assert.Empty(t, d.Calls())
				return
			}
			require.NoError(t, err)
			handle := csi.InlineHandle(pod, "scratch")
			assert.Equal(t, []string{"publish " + handle}, d.Calls(), "published, not staged")
			r := d.PublishRequest(handle)
			assert.Equal(t, "true", r.GetVolumeContext()["csi.storage.k8s.io/ephemeral"])
			assert.Equal(t, "1Mi", r.GetVolumeContext()["size"])
			assert.Equal(t, map[string]string{"k": "v"}, r.GetSecrets())
			assert.Empty(t, vols.InUse(), "inline volumes are not attachable")
			require.NoError(t, vols.Unpublish(context.Background(), filepath.Join(published, "mount")))
			assert.Equal(t, []string{"publish " + handle, "unpublish " + handle}, d.Calls())
		})
	}
}
