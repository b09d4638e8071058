package csi_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

// TestPublishWaitsForTheAttachment: the kubelet's WaitForAttach, once per
// sync. Nothing is staged or published before the volume is attached.
func TestPublishWaitsForTheAttachment(t *testing.T) {
	dir := t.TempDir()
	d, err := csitest.Start(csitest.Config{Name: "fake.csi.example.com", RegistryDir: filepath.Join(dir, "reg"),
		EndpointDir: filepath.Join(dir, "fake"), NodeID: "node-1"})
	require.NoError(t, err)
	defer d.Stop()
	reg := csi.NewRegistry(csi.RegistryConfig{})
	defer reg.Close()
	require.NoError(t, reg.RegisterPlugin(context.Background(), "fake.csi.example.com", d.Endpoint(), []string{"1.0.0"}))
	name := csi.AttachmentName("vol-1", "fake.csi.example.com", "node-1")
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}, Spec: v1.PersistentVolumeSpec{
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "fake.csi.example.com", VolumeHandle: "vol-1"}}}}
	for _, tc := range []struct {
		name string
		objs *objects
		err  string
	}{
		{"no CSIDriver, no attachment yet", &objects{}, "volume vol-1 is not attached for volume attachment " + name},
		{"forbidden: not the node's yet", &objects{forbidden: true}, "volume vol-1 is not attached for volume attachment " + name},
		{"attaching", &objects{attachment: &storagev1.VolumeAttachment{}}, "volume vol-1 is not attached for volume attachment " + name},
		{"attach failed", &objects{attachment: &storagev1.VolumeAttachment{Status: storagev1.VolumeAttachmentStatus{
			AttachError: &storagev1.VolumeError{Message: "rpc error: disk busy"}}}}, "rpc error: disk busy"},
		{"being deleted", &objects{attachment: &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &metav1.Time{}}}},
			"volume attachment is being deleted"},
		// Without DataDir the fake driver neither stages nor publishes:
		// getting that far is what these two show.
		{"attached", &objects{attachment: &storagev1.VolumeAttachment{Status: storagev1.VolumeAttachmentStatus{Attached: true}}}, "MountVolume.SetUp failed for volume \"pv-1\" : rpc error: code = InvalidArgument"},
		{"no attach needed", &objects{driver: &storagev1.CSIDriver{Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}}}, "MountVolume.SetUp failed for volume \"pv-1\" : rpc error: code = InvalidArgument"},
	} {
		vols := &csi.Volumes{Drivers: reg, RootDir: t.TempDir(), Objects: tc.objs, NodeName: "node-1"}
		target := filepath.Join(t.TempDir(), "mount")
		err := vols.Publish(context.Background(), &v1.Pod{}, pv, false, target)
		require.Error(t, err, tc.name)
		assert.Contains(t, err.Error(), tc.err, tc.name)
		_, statErr := os.Stat(filepath.Join(filepath.Dir(target), csi.VolDataFile))
		assert.Equal(t, strings.HasPrefix(tc.err, "MountVolume.SetUp"), statErr == nil, "%s: recorded only once attached", tc.name)
	}
	assert.Empty(t, d.Calls())
}
