package kuberuntime_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/kuberuntime"
)

// kubelet makeMounts: the mounts are made with the container's resolved
// environment, which volumeMounts[].subPathExpr expands (upstream e2e
// "Variable Expansion should allow substituting values in a volume
// subpath").
func TestMountsGetTheResolvedEnvironment(t *testing.T) {
	_, client := startFake(t)
	var got map[string]string
	m, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: client, PodLogsDir: t.TempDir(),
		DNS: kuberuntime.HostDNS("", nil, ""),
		Mounts: func(_ *v1.Pod, _ *v1.Container, env []v1.EnvVar) ([]kc.Mount, error) {
			got = map[string]string{}
			for _, e := range env {
				got[e.Name] = e.Value
			}
			return nil, nil
		}})
	require.NoError(t, err)
	pod := podSpec("envmount", v1.RestartPolicyAlways, v1.Container{Name: "c", Image: testImage, Args: []string{"serve"},
		Env: []v1.EnvVar{{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "DIR", Value: "logs/$(POD_NAME)"}}})
	ctx := context.Background()
	st, err := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	require.NoError(t, err)
	require.NoError(t, m.SyncPod(ctx, pod, st, kuberuntime.SyncOptions{}).Err())
	assert.Equal(t, map[string]string{"POD_NAME": "envmount", "DIR": "logs/envmount"}, got)
}
