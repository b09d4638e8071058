package fake

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestPodUIDIndex: filters by the kubelet's pod UID label (served from an
// index) see exactly that pod's objects as they come and go.
func TestPodUIDIndex(t *testing.T) {
	r, _ := newTest(t)
	ctx := context.Background()
	ids := map[string][2]string{}
	for _, name := range []string{"a", "b"} {
		cfg := podConfig(name)
		cfg.Labels[podUIDLabel] = "uid-" + name
		sb := runPod(t, r, cfg)
		c := testbin("c")
		c.Labels[podUIDLabel] = "uid-" + name
		ids[name] = [2]string{sb, create(t, r, sb, cfg, c)}
	}
	list := func(uid string) (sbs, ctrs []string) {
		sel := map[string]string{podUIDLabel: uid}
		s, err := r.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: sel}})
		require.NoError(t, err)
		for _, it := range s.Items {
			sbs = append(sbs, it.Id)
		}
		c, err := r.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: sel}})
		require.NoError(t, err)
		for _, it := range c.Containers {
			ctrs = append(ctrs, it.Id)
		}
		return sbs, ctrs
	}
	sbs, ctrs := list("uid-a")
	assert.Equal(t, []string{ids["a"][0]}, sbs)
	assert.Equal(t, []string{ids["a"][1]}, ctrs)

	_, err := r.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: ids["a"][1]})
	require.NoError(t, err)
	sbs, ctrs = list("uid-a")
	assert.Len(t, sbs, 1)
	assert.Empty(t, ctrs)

	_, err = r.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: ids["b"][0]})
	require.NoError(t, err)
	sbs, ctrs = list("uid-b")
	assert.Empty(t, sbs)
	assert.Empty(t, ctrs)
	sbs, _ = list("uid-none")
	assert.Empty(t, sbs)
}
