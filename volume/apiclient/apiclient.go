// Package apiclient gives package volume its Objects and TokenRequester
// from the API client (kubeapi): the ConfigMaps and Secrets a node's pods
// reference, and their service accounts' tokens. It is a package of its
// own so that volume compiles without client-go.
//
//	objs, err := apiclient.New(client) // a kubeapi.Interface
//	tokens, err := volume.NewTokens(objs, nil)
//	vols, err := volume.New(volume.Config{Plugins: []volume.Plugin{volume.EmptyDir{}, volume.HostPath{},
//		volume.ConfigMap{Objects: objs}, volume.Secret{Objects: objs}, volume.DownwardAPI{},
//		volume.Projected{Objects: objs, Tokens: tokens}, volume.Image{}}})
package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	authv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit-dev/nodekit/internal/smpdiff"
	"github.com/nodekit-dev/nodekit/kubeapi"
)

// Client is the part of the API client Objects calls: a kubeapi.Interface,
// or a client-go clientset through kubeapi/clientgo.Adapt.
type Client interface {
	ConfigMaps(namespace string) kubeapi.Client[*v1.ConfigMap, *v1.ConfigMapList]
	Secrets(namespace string) kubeapi.Client[*v1.Secret, *v1.SecretList]
	ServiceAccounts(namespace string) kubeapi.ServiceAccountClient
	PersistentVolumeClaims(namespace string) kubeapi.StatusClient[*v1.PersistentVolumeClaim, *v1.PersistentVolumeClaimList]
	PersistentVolumes() kubeapi.StatusClient[*v1.PersistentVolume, *v1.PersistentVolumeList]
}

// Objects reads ConfigMaps and Secrets with the API client; client-go's
// errors pass through, so apierrors.IsNotFound works on them.
type Objects struct{ client Client }

// New wraps client.
func New(client Client) (*Objects, error) {
	if client == nil {
		return nil, errors.New("apiclient: client is nil")
	}
	return &Objects{client: client}, nil
}

// GetConfigMap reads one ConfigMap.
func (o *Objects) GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error) {
	return o.client.ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
}

// CreateToken asks for a service account's token (TokenRequest).
func (o *Objects) CreateToken(ctx context.Context, namespace, serviceAccount string, req *authv1.TokenRequest) (*authv1.TokenRequest, error) {
	return o.client.ServiceAccounts(namespace).CreateToken(ctx, serviceAccount, req, metav1.CreateOptions{})
}

// GetSecret reads one Secret.
func (o *Objects) GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	return o.client.Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
}

// GetPersistentVolumeClaim reads one claim.
func (o *Objects) GetPersistentVolumeClaim(ctx context.Context, namespace, name string) (*v1.PersistentVolumeClaim, error) {
	return o.client.PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
}

// GetPersistentVolume reads one persistent volume.
func (o *Objects) GetPersistentVolume(ctx context.Context, name string) (*v1.PersistentVolume, error) {
	return o.client.PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
}

// PatchPersistentVolumeClaimStatus writes the change from old to updated
// to the claim's status as a strategic merge patch that carries old's
// resourceVersion (a claim changed meanwhile is a conflict), as the
// kubelet's PatchPVCStatus.
func (o *Objects) PatchPersistentVolumeClaimStatus(ctx context.Context, old, updated *v1.PersistentVolumeClaim) (*v1.PersistentVolumeClaim, error) {
	patch, err := claimStatusPatch(old, updated)
	if err != nil {
		return nil, fmt.Errorf("claim %s/%s: %w", old.Namespace, old.Name, err)
	}
	return o.client.PersistentVolumeClaims(old.Namespace).Patch(ctx, old.Name, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{}, "status")
}

// claimLists are the merge lists of a claim's status.
var claimLists = smpdiff.Lists{"status.conditions": {Key: "type"}}

// claimStatus is the part of a claim the kubelet changes.
type claimStatus struct {
	Status v1.PersistentVolumeClaimStatus `json:"status"`
}

// claimStatusPatch is the kubelet's createPVCPatch for a change of status
// (its metadata and spec are not the kubelet's to change), computed by
// smpdiff, with old's resourceVersion.
func claimStatusPatch(old, updated *v1.PersistentVolumeClaim) ([]byte, error) {
	o, err := smpdiff.Object(claimStatus{old.Status})
	if err != nil {
		return nil, err
	}
	n, err := smpdiff.Object(claimStatus{updated.Status})
	if err != nil {
		return nil, err
	}
	patch := smpdiff.Diff(o, n, claimLists)
	patch["metadata"] = map[string]any{"resourceVersion": old.ResourceVersion}
	return json.Marshal(patch)
}
