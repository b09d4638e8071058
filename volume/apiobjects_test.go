package volume

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/podpath"
)

type objects struct {
	cms     map[string]*v1.ConfigMap
	secrets map[string]*v1.Secret
}

func (o *objects) GetConfigMap(_ context.Context, ns, name string) (*v1.ConfigMap, error) {
	if cm, ok := o.cms[name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (o *objects) GetSecret(_ context.Context, ns, name string) (*v1.Secret, error) {
	if s, ok := o.secrets[name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

func TestConfigMapAndSecretVolumes(t *testing.T) {
	objs := &objects{
		cms:     map[string]*v1.ConfigMap{"cfg": {Data: map[string]string{"app.conf": "v1", "other": "o"}}},
		secrets: map[string]*v1.Secret{"creds": {Data: map[string][]byte{"password": []byte("s3cret")}}},
	}
	m, err := New(Config{Layout: podpath.Layout{RootDir: t.TempDir()},
		Plugins: []Plugin{ConfigMap{Objects: objs}, Secret{Objects: objs}}})
	require.NoError(t, err)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u1"}, Spec: v1.PodSpec{Volumes: []v1.Volume{
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "picked", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"},
			Items: []v1.KeyToPath{{Key: "app.conf", Path: "conf/app.conf", Mode: ptr.To[int32](0o600)}}}}},
		{Name: "creds", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds", DefaultMode: ptr.To[int32](0o400)}}},
		{Name: "opt", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "absent", Optional: ptr.To(true)}}},
	}}}
	dirs := map[string]string{}
	for i := range pod.Spec.Volumes {
		d, err := m.SetUp(pod, &pod.Spec.Volumes[i])
		require.NoError(t, err, pod.Spec.Volumes[i].Name)
		dirs[pod.Spec.Volumes[i].Name] = d
	}
	assert.Equal(t, "v1", read(t, filepath.Join(dirs["cfg"], "app.conf")))
	assert.Equal(t, "o", read(t, filepath.Join(dirs["cfg"], "other")))
	assert.Equal(t, "v1", read(t, filepath.Join(dirs["picked"], "conf/app.conf")))
	assert.NoFileExists(t, filepath.Join(dirs["picked"], "other"), "items pick keys")
	info, err := os.Stat(filepath.Join(dirs["picked"], "conf/app.conf"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	info, err = os.Stat(filepath.Join(dirs["creds"], "password"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o400), info.Mode().Perm(), "defaultMode")
	assert.Equal(t, "s3cret", read(t, filepath.Join(dirs["creds"], "password")))
	entries, err := os.ReadDir(dirs["opt"])
	require.NoError(t, err)
	for _, e := range entries {
		assert.Contains(t, e.Name(), "..", "an optional missing secret gives an empty volume")
	}
	link, err := os.Readlink(filepath.Join(dirs["cfg"], "app.conf"))
	require.NoError(t, err)
	assert.Equal(t, "..data/app.conf", link, "files go through ..data, swapped at once")

	// The ConfigMap changes: the next sync's SetUpAll brings the new set.
	objs.cms["cfg"] = &v1.ConfigMap{Data: map[string]string{"app.conf": "v2"}}
	require.NoError(t, m.SetUpAll(pod))
	assert.Equal(t, "v2", read(t, filepath.Join(dirs["cfg"], "app.conf")))
	assert.NoFileExists(t, filepath.Join(dirs["cfg"], "other"), "a removed key is gone")
	hidden := 0
	entries, err = os.ReadDir(dirs["cfg"])
	require.NoError(t, err)
	for _, e := range entries {
		if e.IsDir() {
			hidden++
		}
	}
	assert.Equal(t, 1, hidden, "the old data directory is removed")

	// A required ConfigMap or key missing is an error naming it.
	delete(objs.cms, "cfg")
	assert.ErrorContains(t, m.SetUpAll(pod), `volumes[cfg]: configMap "cfg"`)
	objs.cms["cfg"] = &v1.ConfigMap{Data: map[string]string{"other": "o"}}
	assert.ErrorContains(t, m.SetUpAll(pod), `volumes[picked]: configMap "cfg": items[0].key: Not found: "app.conf"`)
}

func TestWriteAtomicRefusesPathsOut(t *testing.T) {
	for _, p := range []string{"../x", "/etc/passwd", "a/../../x", "..data"} {
		assert.Error(t, writeAtomic(t.TempDir(), map[string]File{p: {Data: []byte("x"), Mode: 0o644}}, nil), p)
	}
}
