package apiclient

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/kubeapi"
	"github.com/nodekit-dev/nodekit/podstatus"
)

// PodsGetter is the API client PodAPI calls: a kubeapi.Interface, or a
// client-go clientset through kubeapi/clientgo.Adapt.
type PodsGetter interface {
	Pods(namespace string) kubeapi.StatusClient[*v1.Pod, *v1.PodList]
}

// PodAPI is podstatus.PodAPI over the API client. With the node's own
// credentials (system:node:<name>), the Node authorizer allows these
// calls on the pods bound to the node.
type PodAPI struct {
	client PodsGetter
}

var _ podstatus.PodAPI = (*PodAPI)(nil)

// New returns a PodAPI calling the API server through client.
func New(client PodsGetter) (*PodAPI, error) {
	if client == nil {
		return nil, errors.New("apiclient: client is required")
	}
	return &PodAPI{client: client}, nil
}

// GetPod reads the pod.
func (c *PodAPI) GetPod(ctx context.Context, namespace, name string) (*v1.Pod, error) {
	return c.client.Pods(namespace).Get(ctx, name, metav1.GetOptions{})
}

// PatchPodStatus sends patch, a strategic-merge patch of the pod's status
// subresource, as the kubelet's statusutil.PatchPodStatus does. The UID
// precondition is in the patch (metadata.uid); uid is not sent again.
func (c *PodAPI) PatchPodStatus(ctx context.Context, namespace, name string, _ types.UID, patch []byte) (*v1.Pod, error) {
	return c.client.Pods(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{}, "status")
}

// DeletePod deletes the pod at once (grace period 0: its containers are
// already stopped) if its UID is uid, as the kubelet's status manager
// does once a pod is terminal.
func (c *PodAPI) DeletePod(ctx context.Context, namespace, name string, uid types.UID) error {
	return c.client.Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
}
