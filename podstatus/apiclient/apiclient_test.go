package apiclient_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/kubeapi/clientgo"
	"github.com/nodekit-dev/nodekit/podstatus"
	"github.com/nodekit-dev/nodekit/podstatus/apiclient"
)

var t0 = time.Unix(1700000000, 0)

func pod(deleted bool) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"},
		Spec: v1.PodSpec{NodeName: "node-1", Containers: []v1.Container{{Name: "web"}}}}
	if deleted {
		at := metav1.NewTime(t0)
		p.DeletionTimestamp = &at
	}
	return p
}

func TestClientCallsAsTheKubelet(t *testing.T) {
	client := fake.NewClientset(pod(false))
	api, err := apiclient.New(clientgo.Adapt(client))
	require.NoError(t, err)
	ctx := context.Background()

	got, err := api.GetPod(ctx, "default", "web")
	require.NoError(t, err)
	assert.Equal(t, types.UID("u1"), got.UID)

	patch, _, err := podstatus.StatusPatch("u1", got.Status, v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.0.0.7"})
	require.NoError(t, err)
	got, err = api.PatchPodStatus(ctx, "default", "web", "u1", patch)
	require.NoError(t, err)
	assert.Equal(t, v1.PodRunning, got.Status.Phase)
	assert.Equal(t, "10.0.0.7", got.Status.PodIP)
	assert.Equal(t, "node-1", got.Spec.NodeName, "the spec is untouched")

	require.NoError(t, api.DeletePod(ctx, "default", "web", "u1"))
	_, err = api.GetPod(ctx, "default", "web")
	assert.True(t, apierrors.IsNotFound(err), "gone: %v", err)
	_, err = api.PatchPodStatus(ctx, "default", "web", "u1", patch)
	assert.True(t, apierrors.IsNotFound(err), "patching a pod that is gone: %v", err)
	assert.True(t, apierrors.IsNotFound(api.DeletePod(ctx, "default", "web", "u1")))

	actions := client.Actions()
	require.Len(t, actions, 6)
	p := actions[1].(k8stesting.PatchAction)
	assert.Equal(t, "status", p.GetSubresource())
	assert.Equal(t, types.StrategicMergePatchType, p.GetPatchType())
	assert.JSONEq(t, `{"metadata":{"uid":"u1"},"status":{"phase":"Running","podIP":"10.0.0.7"}}`, string(p.GetPatch()))
	d := actions[2].(k8stesting.DeleteActionImpl)
	assert.Equal(t, "web", d.GetName())
	require.NotNil(t, d.DeleteOptions.GracePeriodSeconds)
	assert.Equal(t, int64(0), *d.DeleteOptions.GracePeriodSeconds, "grace period 0")
	require.NotNil(t, d.DeleteOptions.Preconditions)
	assert.Equal(t, types.UID("u1"), *d.DeleteOptions.Preconditions.UID, "UID precondition")
}

func TestNewNeedsAClient(t *testing.T) {
	_, err := apiclient.New(nil)
	assert.ErrorContains(t, err, "apiclient: client is required")
}

// An APIWriter over the client: the status is written, then the pod, deleted
// and terminal, is removed.
func TestAPIWriterOverClient(t *testing.T) {
	client := fake.NewClientset(pod(true))
	api, err := apiclient.New(clientgo.Adapt(client))
	require.NoError(t, err)
	clk := clocktesting.NewFakeClock(t0)
	statuses := podstatus.NewManager(clk)
	writer, err := podstatus.NewAPIWriter(podstatus.APIWriterConfig{API: api, Statuses: statuses, Clock: clk})
	require.NoError(t, err)
	ctx := context.Background()

	running := v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "web",
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}}}}}
	statuses.SetPodStatus(pod(true), running)
	assert.Equal(t, 1, writer.Sync(ctx))
	got, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1.PodRunning, got.Status.Phase, "deleted, still running: kept")

	statuses.SetPodStatus(pod(true), v1.PodStatus{Phase: v1.PodSucceeded, ContainerStatuses: []v1.ContainerStatus{{Name: "web",
		State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0}}}}})
	assert.Equal(t, 1, writer.Sync(ctx))
	_, err = client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "deleted: %v", err)
	var verbs []string
	for _, a := range client.Actions() {
		verbs = append(verbs, a.GetVerb())
	}
	assert.Equal(t, []string{"patch", "get", "patch", "delete", "get"}, verbs, "no read before a write")
}
