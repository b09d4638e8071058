package nodekit_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReferenceAgentIsOnlyWiring: examples/kubelet is flags and wiring,
// at most 500 non-blank lines of Go (DEVELOPERS.md); logic a second agent
// would want belongs in a package.
func TestReferenceAgentIsOnlyWiring(t *testing.T) {
	files, err := filepath.Glob("examples/kubelet/*.go")
	require.NoError(t, err)
	lines := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		fh, err := os.Open(f)
		require.NoError(t, err)
		s := bufio.NewScanner(fh)
		for s.Scan() {
			if strings.TrimSpace(s.Text()) != "" {
				lines++
			}
		}
		require.NoError(t, s.Err())
		fh.Close()
	}
	assert.LessOrEqual(t, lines, 500, "examples/kubelet has %d non-blank lines of Go", lines)
}
