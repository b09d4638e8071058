package runtime_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

// In process, a caller gets copies of what the server returned, as over
// gRPC; WithSharedListResponses shares a listing's items (in a slice of the
// caller's own) and still copies the rest.
func TestInProcessCopies(t *testing.T) {
	for _, tc := range []struct {
		name       string
		opts       []runtime.Option
		sharedList bool
	}{
		{"copied", nil, false},
		{"shared lists", []runtime.Option{runtime.WithSharedListResponses()}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := fake.New(fake.WithImages(pauseImage))
			t.Cleanup(func() { f.Close() })
			c := runtime.NewInProcessClient(f, tc.opts...)
			for _, name := range []string{"a", "b"} {
				_, err := c.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{
					Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "ns", Uid: "uid-" + name}}, "")
				require.NoError(t, err)
			}
			first, err := c.ListPodSandbox(ctx, nil)
			require.NoError(t, err)
			require.Len(t, first, 2)
			first[0], first[1] = first[1], first[0] // the caller's slice: reordering it changes nothing of the server's
			second, err := c.ListPodSandbox(ctx, nil)
			require.NoError(t, err)
			require.Len(t, second, 2)
			assert.Equal(t, first[1].Id, second[0].Id, "the server's order is intact")
			assert.Equal(t, tc.sharedList, first[1] == second[0], "the same item, only when shared")

			st1, err := c.PodSandboxStatus(ctx, second[0].Id, false)
			require.NoError(t, err)
			st2, err := c.PodSandboxStatus(ctx, second[0].Id, false)
			require.NoError(t, err)
			assert.NotSame(t, st1.Status, st2.Status, "other responses are always copies")
		})
	}
}
