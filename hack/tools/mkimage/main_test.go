package main

import (
	"archive/tar"
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func layerHeaders(t *testing.T, layer []byte) map[string]*tar.Header {
	t.Helper()
	hs := map[string]*tar.Header{}
	tr := tar.NewReader(bytes.NewReader(layer))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return hs
		}
		require.NoError(t, err)
		hs[h.Name] = h
	}
}

func TestBuildLayerLinksAndDirs(t *testing.T) {
	links := []linkSpec{{dst: "bin/sh", target: "busybox"}, {dst: "usr/bin", target: "/bin"}}
	dirs := []dirSpec{{dst: "var/www", mode: 0o750}}
	layer, err := buildLayer(nil, links, dirs)
	require.NoError(t, err)
	hs := layerHeaders(t, layer)

	require.Contains(t, hs, "bin/sh")
	assert.Equal(t, byte(tar.TypeSymlink), hs["bin/sh"].Typeflag)
	assert.Equal(t, "busybox", hs["bin/sh"].Linkname)
	assert.Equal(t, "/bin", hs["usr/bin"].Linkname)
	require.Contains(t, hs, "bin/", "a link's parent directory is created")
	require.Contains(t, hs, "var/www/")
	assert.Equal(t, int64(0o750), hs["var/www/"].Mode)
	assert.Equal(t, int64(0o755), hs["var/"].Mode)
}

func TestBuildLayerRefusesCollisions(t *testing.T) {
	for name, tc := range map[string]struct {
		links []linkSpec
		dirs  []dirSpec
	}{
		"link over a skeleton dir":  {links: []linkSpec{{dst: "etc", target: "/x"}}},
		"link over a skeleton file": {links: []linkSpec{{dst: "etc/passwd", target: "/x"}}},
		"link twice":                {links: []linkSpec{{dst: "a", target: "b"}, {dst: "a", target: "c"}}},
		"dir over a file":           {dirs: []dirSpec{{dst: "etc/group", mode: 0o755}}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := buildLayer(nil, tc.links, tc.dirs)
			assert.Error(t, err)
		})
	}
}

func TestParseLinkAndDirSpecs(t *testing.T) {
	l, err := parseLinkSpec("/bin/ls=busybox")
	require.NoError(t, err)
	assert.Equal(t, linkSpec{dst: "bin/ls", target: "busybox"}, l)
	d, err := parseDirSpec("/uploads:1777")
	require.NoError(t, err)
	assert.Equal(t, dirSpec{dst: "uploads", mode: 0o1777}, d)
	for _, bad := range []string{"noequals", "=target", "/="} {
		_, err := parseLinkSpec(bad)
		assert.Error(t, err, bad)
	}
	for _, bad := range []string{"/", "/x:9", "/x:77777"} {
		_, err := parseDirSpec(bad)
		assert.Error(t, err, bad)
	}
}
