// Package apiclient gives package csi its Objects from the API client
// (kubeapi): the CSIDriver objects (does a driver need attaching? what is
// its fsGroupPolicy?), the VolumeAttachments the attach-detach controller
// makes and the secrets PVs name. A package of its own so that csi
// compiles without client-go.
//
//	objs, _ := apiclient.New(client) // a kubeapi.Interface
//	vols := &csi.Volumes{Drivers: registry, RootDir: rootDir, Objects: objs, NodeName: "node-1"}
package apiclient

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit-dev/nodekit/csi"
	"github.com/nodekit-dev/nodekit/kubeapi"
)

// Client is the part of the API client Objects calls: a kubeapi.Interface,
// or a client-go clientset through kubeapi/clientgo.Adapt.
type Client interface {
	CSIDrivers() kubeapi.Client[*storagev1.CSIDriver, *storagev1.CSIDriverList]
	Secrets(namespace string) kubeapi.Client[*v1.Secret, *v1.SecretList]
	VolumeAttachments() kubeapi.StatusClient[*storagev1.VolumeAttachment, *storagev1.VolumeAttachmentList]
}

// Objects reads CSIDrivers, VolumeAttachments and secrets; client-go's errors pass
// through (apierrors.IsNotFound works on them).
type Objects struct{ client Client }

var _ csi.Objects = (*Objects)(nil)

// New wraps client.
func New(client Client) (*Objects, error) {
	if client == nil {
		return nil, errors.New("apiclient: client is nil")
	}
	return &Objects{client: client}, nil
}

// GetCSIDriver reads a driver's CSIDriver object.
func (o *Objects) GetCSIDriver(ctx context.Context, name string) (*storagev1.CSIDriver, error) {
	return o.client.CSIDrivers().Get(ctx, name, metav1.GetOptions{})
}

// GetSecret reads a secret a PV names for its driver (the Node authorizer
// lets a node read those of the PVs its pods use).
func (o *Objects) GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	return o.client.Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
}

// GetVolumeAttachment reads one VolumeAttachment.
func (o *Objects) GetVolumeAttachment(ctx context.Context, name string) (*storagev1.VolumeAttachment, error) {
	return o.client.VolumeAttachments().Get(ctx, name, metav1.GetOptions{})
}
