// Package apiclient gives package csi its Objects from a client-go
// clientset: the CSIDriver objects (does a driver need attaching? what is
// its fsGroupPolicy?), the VolumeAttachments the attach-detach controller
// makes and the secrets PVs name. A package of its own so that csi
// compiles without client-go.
//
//	objs, _ := apiclient.New(clientset)
//	vols := &csi.Volumes{Drivers: registry, RootDir: rootDir, Objects: objs, NodeName: "node-1"}
package apiclient

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodekit-dev/nodekit/csi"
)

// Objects reads CSIDrivers, VolumeAttachments and secrets; client-go's errors pass
// through (apierrors.IsNotFound works on them).
type Objects struct{ client kubernetes.Interface }

var _ csi.Objects = (*Objects)(nil)

// New wraps client.
func New(client kubernetes.Interface) (*Objects, error) {
	if client == nil {
		return nil, errors.New("apiclient: client is nil")
	}
	return &Objects{client: client}, nil
}

// GetCSIDriver reads a driver's CSIDriver object.
func (o *Objects) GetCSIDriver(ctx context.Context, name string) (*storagev1.CSIDriver, error) {
	return o.client.StorageV1().CSIDrivers().Get(ctx, name, metav1.GetOptions{})
}

// GetSecret reads a secret a PV names for its driver (the Node authorizer
// lets a node read those of the PVs its pods use).
func (o *Objects) GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	return o.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
}

// GetVolumeAttachment reads one VolumeAttachment.
func (o *Objects) GetVolumeAttachment(ctx context.Context, name string) (*storagev1.VolumeAttachment, error) {
	return o.client.StorageV1().VolumeAttachments().Get(ctx, name, metav1.GetOptions{})
}
