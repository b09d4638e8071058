package runtime

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestReplyCodecReadsRepliesOfAnyFrames: a reply read in one buffer or
// in many (gRPC's 16 KB frames) decodes to what was sent.
func TestReplyCodecReadsRepliesOfAnyFrames(t *testing.T) {
	var sent runtimeapi.ListContainersResponse
	for i := range 400 {
		sent.Containers = append(sent.Containers, &runtimeapi.Container{Id: fmt.Sprintf("%064d", i), PodSandboxId: fmt.Sprintf("sb-%d", i),
			Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: "registry.k8s.io/pause:3.10"},
			State: runtimeapi.ContainerState_CONTAINER_RUNNING, Labels: map[string]string{"io.kubernetes.pod.uid": fmt.Sprint(i)}})
	}
	wire, err := proto.Marshal(&sent)
	require.NoError(t, err)
	require.Greater(t, len(wire), 32<<10, "larger than gRPC's pooled tiers below 1 MB")
	codec := replyCodec{encoding.GetCodecV2(grpcproto.Name)}
	for _, frame := range []int{len(wire), 16 << 10, 1000} {
		var data mem.BufferSlice
		for b := wire; len(b) > 0; {
			n := min(frame, len(b))
			data = append(data, mem.SliceBuffer(b[:n]))
			b = b[n:]
		}
		var got runtimeapi.ListContainersResponse
		require.NoError(t, codec.Unmarshal(data, &got), "frames of %d bytes", frame)
		assert.True(t, proto.Equal(&sent, &got), "frames of %d bytes", frame)
	}
	assert.ErrorContains(t, codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(wire[:10]), mem.SliceBuffer(wire[10:20])},
		&runtimeapi.ListContainersResponse{}), "cannot parse", "a truncated reply is an error")
}
