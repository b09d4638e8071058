package main

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/require"
)

// An archive's image is served under its RepoTag without the registry host,
// with the same config (so the same image ID as `ctr images import` gives).
func TestPushServesArchiveUnderItsRepoTag(t *testing.T) {
	img, err := random.Image(1024, 1)
	require.NoError(t, err)
	tag, err := name.NewTag("nodekit.local/e2e-test-images/kitten:1.8")
	require.NoError(t, err)
	archive := filepath.Join(t.TempDir(), "kitten.tar")
	require.NoError(t, tarball.WriteToFile(archive, tag, img))

	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	require.NoError(t, push(addr, archive))

	ref, err := name.NewTag(addr+"/e2e-test-images/kitten:1.8", name.Insecure)
	require.NoError(t, err)
	got, err := remote.Image(ref)
	require.NoError(t, err)
	want, err := img.ConfigName()
	require.NoError(t, err)
	gotID, err := got.ConfigName()
	require.NoError(t, err)
	require.Equal(t, want, gotID)
}

func TestPushNamesTheArchiveItCannotRead(t *testing.T) {
	archive := filepath.Join(t.TempDir(), "missing.tar")
	require.ErrorContains(t, push("127.0.0.1:1", archive), archive)
}
