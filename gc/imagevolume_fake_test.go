package gc_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit-dev/nodekit/gc"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

// listerOnly hides the client's ContainerStatus: a GC that cannot read
// mounts.
type listerOnly struct{ gc.ContainerLister }

// TestImageGCKeepsImageVolumes: the kubelet's handleImageVolumes. An image
// a container mounts as an image volume (CRI Mount.image, by ID) is in
// use, whatever the container's state, and survives a GC that must free
// space; a GC given no way to read container statuses does not see it.
func TestImageGCKeepsImageVolumes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		containers func(*criEnv) gc.ContainerLister
		exited     bool
		kept       bool
	}{
		{name: "running container mounts it", containers: func(e *criEnv) gc.ContainerLister { return e.client }, kept: true},
		{name: "exited container mounts it", containers: func(e *criEnv) gc.ContainerLister { return e.client }, exited: true, kept: true},
		{name: "no statuses to read", containers: func(e *criEnv) gc.ContainerLister { return listerOnly{e.client} }, kept: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newCRIEnv(t)
			img, err := e.client.ImageStatus(e.ctx, &runtimeapi.ImageSpec{Image: fake.RemovableImage}, false)
			require.NoError(t, err)
			p := e.pod("uid-iv", "iv", nil)
			args := []string{"sleep"}
			if tc.exited {
				args = []string{"exit", "0"}
			}
			id, err := e.client.CreateContainer(e.ctx, p.sandbox, &runtimeapi.ContainerConfig{
				Metadata: &runtimeapi.ContainerMetadata{Name: "reader"},
				Image:    &runtimeapi.ImageSpec{Image: fake.TestbinImage},
				Args:     args,
				Labels: map[string]string{kc.LabelPodName: p.name, kc.LabelPodNamespace: "default", kc.LabelPodUID: p.uid,
					kc.LabelContainerName: "reader"},
				Mounts: []*runtimeapi.Mount{{ContainerPath: "/data", Readonly: true,
					Image: &runtimeapi.ImageSpec{Image: img.Image.Id, UserSpecifiedImage: fake.RemovableImage}}},
				LogPath: "reader/0.log",
			}, p.cfg)
			require.NoError(t, err)
			require.NoError(t, e.client.StartContainer(e.ctx, id))
			full := gc.FsStatsFunc(func(string) (uint64, uint64, error) { return 1000, 100, nil })
			g, err := gc.NewImageGC(gc.ImageConfig{Images: e.client, Containers: tc.containers(e), SandboxImage: fake.PauseImage,
				FsStats: full, Clock: e.clk})
			require.NoError(t, err)
			_, _ = g.GarbageCollect(context.Background()) // first sight
			e.clk.Step(gc.DefaultImageMinimumGCAge)
			_, _ = g.GarbageCollect(context.Background()) // frees what it may; too little is an error
			st, err := e.client.ImageStatus(e.ctx, &runtimeapi.ImageSpec{Image: fake.RemovableImage}, false)
			require.NoError(t, err)
			assert.Equal(t, tc.kept, st.GetImage() != nil)
		})
	}
}
