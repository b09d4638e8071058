package kubeletflags_test

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodekit-dev/nodekit/kubeletflags"
)

func TestVersionFlag(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		print    string
		reported string
		text     string
		err      string
	}{
		{args: nil, print: "", text: ""},
		{args: []string{"--version"}, print: "true", text: "Kubernetes v1.37.2+nodekit\n"},
		{args: []string{"--version=true"}, print: "true", text: "Kubernetes v1.37.2+nodekit\n"},
		{args: []string{"--version=1"}, print: "true", text: "Kubernetes v1.37.2+nodekit\n"},
		{args: []string{"--version", "--version=false"}, print: ""},
		{args: []string{"--version=raw"}, print: "raw"},
		{args: []string{"--version=v1.37.2-custom.1"}, reported: "v1.37.2-custom.1"},
		{args: []string{"--version=v1.37.2-custom.1", "--version"}, print: "true", reported: "v1.37.2-custom.1",
			text: "Kubernetes v1.37.2-custom.1\n"},
		{args: []string{"--version=v1.38.0"}, err: `version "v1.38.0" must match major/minor/patch of default version "v1.37.2+nodekit"`},
		{args: []string{"--version=v1"}, err: "v1"},
		{args: []string{"--version=yes"}, err: `"yes" is neither true, false, raw nor a version vX.Y.Z`},
	} {
		v := &kubeletflags.VersionFlag{Default: "v1.37.2+nodekit"}
		fs := flag.NewFlagSet("kubelet", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.Var(v, "version", "")
		err := fs.Parse(tc.args)
		if tc.err != "" {
			require.Error(t, err, tc.args)
			assert.Contains(t, err.Error(), tc.err)
			continue
		}
		require.NoError(t, err, tc.args)
		assert.Equal(t, tc.print, v.Print, tc.args)
		assert.Equal(t, tc.reported, v.Reported, tc.args)
		if tc.print != "raw" {
			assert.Equal(t, tc.text, v.Text(), tc.args)
		}
	}
}

func TestVersionRaw(t *testing.T) {
	v := &kubeletflags.VersionFlag{Default: "v1.37.2+nodekit", Print: "raw"}
	assert.True(t, strings.HasPrefix(v.Text(), `version.Info{Major:"1", Minor:"37", `), v.Text())
	assert.Contains(t, v.Text(), `GitVersion:"v1.37.2+nodekit"`)
	info := kubeletflags.VersionInfo("v1.37.2+nodekit")
	assert.Equal(t, "1", info.Major)
	assert.Equal(t, "37", info.Minor)
	assert.NotEmpty(t, info.GoVersion)
}
