package nodekit_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	utilversion "k8s.io/apimachinery/pkg/util/version"

	"github.com/nodekit-dev/nodekit/kubeletflags"
	"github.com/nodekit-dev/nodekit/nodestatus"
	"github.com/nodekit-dev/nodekit/prober/probe"
)

// TestOneKubeletRelease: the command line, the reported version and the
// probes' User-Agent name the same kubelet release.
func TestOneKubeletRelease(t *testing.T) {
	flags, err := utilversion.ParseSemantic(kubeletflags.Version)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(nodestatus.DefaultKubeletVersion, kubeletflags.Version+"+"),
		"nodestatus.DefaultKubeletVersion %q is kubeletflags.Version %q marked", nodestatus.DefaultKubeletVersion, kubeletflags.Version)
	assert.Equal(t, fmt.Sprintf("kube-probe/%d.%d", flags.Major(), flags.Minor()), probe.DefaultUserAgent)
}
