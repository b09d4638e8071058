// Package apiclient gives package volume its Objects and TokenRequester
// from a client-go clientset: the ConfigMaps and Secrets a node's pods
// reference, and their service accounts' tokens. It is a package of its
// own so that volume compiles without client-go.
//
//	objs, err := apiclient.New(clientset)
//	tokens, err := volume.NewTokens(objs, nil)
//	vols, err := volume.New(volume.Config{Plugins: []volume.Plugin{volume.EmptyDir{}, volume.HostPath{},
//		volume.ConfigMap{Objects: objs}, volume.Secret{Objects: objs}, volume.DownwardAPI{},
//		volume.Projected{Objects: objs, Tokens: tokens}, volume.Image{}}})
package apiclient

import (
	"context"
	"errors"

	authv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Objects reads ConfigMaps and Secrets with a clientset; client-go's
// errors pass through, so apierrors.IsNotFound works on them.
type Objects struct{ client kubernetes.Interface }

// New wraps client.
func New(client kubernetes.Interface) (*Objects, error) {
	if client == nil {
		return nil, errors.New("apiclient: client is nil")
	}
	return &Objects{client: client}, nil
}

// GetConfigMap reads one ConfigMap.
func (o *Objects) GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error) {
	return o.client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
}

// CreateToken asks for a service account's token (TokenRequest).
func (o *Objects) CreateToken(ctx context.Context, namespace, serviceAccount string, req *authv1.TokenRequest) (*authv1.TokenRequest, error) {
	return o.client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, serviceAccount, req, metav1.CreateOptions{})
}

// GetSecret reads one Secret.
func (o *Objects) GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	return o.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
}

// GetPersistentVolumeClaim reads one claim.
func (o *Objects) GetPersistentVolumeClaim(ctx context.Context, namespace, name string) (*v1.PersistentVolumeClaim, error) {
	return o.client.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
}

// GetPersistentVolume reads one persistent volume.
func (o *Objects) GetPersistentVolume(ctx context.Context, name string) (*v1.PersistentVolume, error) {
	return o.client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
}
