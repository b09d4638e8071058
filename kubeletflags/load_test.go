package kubeletflags_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/kubeletflags"
)

const head = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

// writeFiles writes name → content under dir, making subdirectories.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

func TestLoadConfig(t *testing.T) {
	for _, tc := range []struct {
		name     string
		file     string            // the --config file's content; "" for none
		dropIns  map[string]string // the --config-dir's files; nil for no dir
		check    func(t *testing.T, got *kubeletflags.LoadedConfig, dir string)
		wantErrs []string
	}{
		{name: "file only, relative paths made relative to its directory",
			file: head + "port: 10251\nstaticPodPath: manifests\nclusterDNS: [10.0.0.10]\n",
			check: func(t *testing.T, got *kubeletflags.LoadedConfig, dir string) {
				assert.Equal(t, int32(10251), got.Config.Port)
				assert.Equal(t, filepath.Join(dir, "manifests"), got.Config.StaticPodPath)
				assert.Nil(t, got.Lenient)
			}},
		{name: "a misspelt field: decoded leniently, the strict error kept",
			file: head + "maxPodz: 20\nmaxPods: 30\n",
			check: func(t *testing.T, got *kubeletflags.LoadedConfig, _ string) {
				assert.Equal(t, int32(30), got.Config.MaxPods)
				assert.ErrorContains(t, got.Lenient, `unknown field "maxPodz"`)
			}},
		{name: "a duplicate field: decoded leniently, the last value",
			file: head + "maxPods: 20\nmaxPods: 30\n",
			check: func(t *testing.T, got *kubeletflags.LoadedConfig, _ string) {
				assert.Equal(t, int32(30), got.Config.MaxPods)
				assert.ErrorContains(t, got.Lenient, "maxPods")
			}},
		{name: "a field of the wrong type is an error", file: head + "maxPods: lots\n",
			wantErrs: []string{"--config ", "maxPods"}},
		{name: "no kind", file: "apiVersion: kubelet.config.k8s.io/v1beta1\nport: 1\n",
			wantErrs: []string{`apiVersion/kind: Unsupported value: "kubelet.config.k8s.io/v1beta1"/""`}},
		{name: "drop-ins in lexical order, subdirectories included, over the file",
			file: head + "port: 10251\nmaxPods: 50\nclusterDNS: [10.0.0.10, 10.0.0.11]\n" +
				"authorization: {mode: Webhook, webhook: {cacheAuthorizedTTL: 5m, cacheUnauthorizedTTL: 30s}}\n" +
				"evictionHard: {memory.available: 100Mi, nodefs.available: 10%}\nsystemReserved: {cpu: 100m}\n",
			dropIns: map[string]string{
				"20-b.conf":      head + "maxPods: 70\nauthorization: {webhook: {cacheAuthorizedTTL: 8m}}\nclusterDNS: [10.0.0.12]\n",
				"10-a.conf":      head + "maxPods: 60\nport: 10252\nevictionHard: {memory.available: 200Mi}\n",
				"30-sub/00.conf": head + "maxPods: 80\nsystemReserved: null\n",
				"README":         "not a drop-in",
				"40-c.yaml":      head + "maxPods: 1\n",
			},
			check: func(t *testing.T, got *kubeletflags.LoadedConfig, dir string) {
				kc := got.Config
				assert.Equal(t, int32(80), kc.MaxPods, "30-sub/00.conf comes last")
				assert.Equal(t, int32(10252), kc.Port)
				assert.Equal(t, []string{"10.0.0.12"}, kc.ClusterDNS, "a list is replaced whole")
				assert.Equal(t, "Webhook", string(kc.Authorization.Mode), "a struct is merged field by field")
				assert.Equal(t, "8m0s", kc.Authorization.Webhook.CacheAuthorizedTTL.Duration.String())
				assert.Equal(t, "30s", kc.Authorization.Webhook.CacheUnauthorizedTTL.Duration.String())
				assert.Equal(t, map[string]string{"memory.available": "200Mi", "nodefs.available": "10%"}, kc.EvictionHard,
					"a map is merged key by key (JSON merge patch)")
				assert.Nil(t, kc.SystemReserved, "null unsets")
				assert.Equal(t, []string{filepath.Join(dir, "40-c.yaml"), filepath.Join(dir, "README")}, got.SkippedDropIns,
					"skipped, in walk order")
			}},
		{name: "a drop-in directory without a file",
			dropIns: map[string]string{"a.conf": head + "maxPods: 7\nstaticPodPath: manifests\n"},
			check: func(t *testing.T, got *kubeletflags.LoadedConfig, _ string) {
				assert.Equal(t, int32(7), got.Config.MaxPods)
				assert.Equal(t, "manifests", got.Config.StaticPodPath, "a drop-in's relative path is kept, as in the kubelet")
			}},
		{name: "an unknown field in a drop-in is reported and the rest applied",
			dropIns: map[string]string{"a.conf": head + "maxPodz: 7\nfailCgroupV1: false\n"},
			check: func(t *testing.T, got *kubeletflags.LoadedConfig, _ string) {
				assert.Equal(t, ptr.To(false), got.Config.FailCgroupV1)
				require.Len(t, got.UnknownDropInFields, 1)
				assert.ErrorContains(t, got.UnknownDropInFields[0], `unknown field "maxPodz"`)
			}},
		{name: "a drop-in without apiVersion and kind", dropIns: map[string]string{"a.conf": "maxPods: 7\n"},
			wantErrs: []string{"--config-dir ", "a.conf", `apiVersion/kind: Unsupported value: ""/""`}},
		{name: "a drop-in of another kind", dropIns: map[string]string{"a.conf": "apiVersion: v1\nkind: Pod\n"},
			wantErrs: []string{`"v1"/"Pod"`}},
		{name: "a drop-in with a duplicate field", dropIns: map[string]string{"a.conf": head + "maxPods: 1\nmaxPods: 2\n"},
			wantErrs: []string{"a.conf", "maxPods"}},
		{name: "a drop-in with a field of the wrong type", dropIns: map[string]string{"a.conf": head + "maxPods: lots\n"},
			wantErrs: []string{"a.conf", "maxPods"}},
		{name: "a drop-in that is not YAML", dropIns: map[string]string{"a.conf": "{{"},
			wantErrs: []string{"a.conf"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			var file, dir string
			if tc.file != "" {
				file = filepath.Join(base, "config.yaml")
				writeFiles(t, base, map[string]string{"config.yaml": tc.file})
			}
			if tc.dropIns != nil {
				dir = filepath.Join(base, "config.d")
				require.NoError(t, os.Mkdir(dir, 0o755))
				writeFiles(t, dir, tc.dropIns)
			}
			got, err := kubeletflags.LoadConfig(file, dir)
			if tc.wantErrs != nil {
				require.Error(t, err)
				for _, want := range tc.wantErrs {
					assert.Contains(t, err.Error(), want)
				}
				return
			}
			require.NoError(t, err)
			tc.check(t, got, map[bool]string{true: base, false: dir}[tc.dropIns == nil])
		})
	}
}

func TestLoadConfigMissing(t *testing.T) {
	_, err := kubeletflags.LoadConfig(filepath.Join(t.TempDir(), "nope.yaml"), "")
	assert.ErrorIs(t, err, os.ErrNotExist)
	_, err = kubeletflags.LoadConfig("", filepath.Join(t.TempDir(), "nope.d"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	got, err := kubeletflags.LoadConfig("", "")
	require.NoError(t, err)
	assert.Zero(t, *got.Config)
}

// TestLoadedConfigLog: what the kubelet logs of its config files.
func TestLoadedConfigLog(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"kubelet.yaml": head + "maxPods: 20\nbogusField: 1\n",
		"conf.d/10-a.conf": head + "syncFrequency: 5s\n", "conf.d/README": "not a drop-in"})
	loaded, err := kubeletflags.LoadConfig(filepath.Join(dir, "kubelet.yaml"), filepath.Join(dir, "conf.d"))
	require.NoError(t, err)
	var lines []string
	log := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 4})
	loaded.Log(log)
	require.Len(t, lines, 2)
	assert.Contains(t, lines[0], `"msg"="Using lenient decoding as strict decoding failed"`)
	assert.Contains(t, lines[0], "bogusField")
	assert.Contains(t, lines[1], `"msg"="Skipped file in drop-in directory (does not have .conf extension)"`)
	(*kubeletflags.LoadedConfig)(nil).Log(log) // nothing, no panic
	assert.Len(t, lines, 2)
}
