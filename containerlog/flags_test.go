package containerlog_test

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodekit-dev/nodekit/containerlog"
)

func TestAddFlags(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		size     string
		files    int
		parseErr string
	}{
		{args: nil, size: "10Mi", files: 5},
		{args: []string{"--container-log-max-size=1Mi", "--container-log-max-files=3"}, size: "1Mi", files: 3},
		{args: []string{"--container-log-max-size=lots"}, parseErr: `invalid value "lots" for flag -container-log-max-size: quantities must match the regular expression`},
	} {
		var cfg containerlog.Config
		fs := flag.NewFlagSet("kubelet", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		cfg.AddFlags(fs)
		err := fs.Parse(tc.args)
		if tc.parseErr != "" {
			assert.ErrorContains(t, err, tc.parseErr)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.size, cfg.MaxSize.String())
		assert.Equal(t, tc.files, cfg.MaxFiles)
	}
}
