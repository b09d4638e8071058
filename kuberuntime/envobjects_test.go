package kuberuntime_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/kuberuntime"
)

type objects struct {
	cms     map[string]*v1.ConfigMap
	secrets map[string]*v1.Secret
}

func (o objects) GetConfigMap(_ context.Context, ns, name string) (*v1.ConfigMap, error) {
	if cm, ok := o.cms[ns+"/"+name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (o objects) GetSecret(_ context.Context, ns, name string) (*v1.Secret, error) {
	if s, ok := o.secrets[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func TestEnvFromConfigMapsAndSecrets(t *testing.T) {
	_, client := startFake(t)
	objs := objects{
		cms:     map[string]*v1.ConfigMap{"default/cfg": {ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"LEVEL": "debug", "MODE": "fast", "bad-name": "x"}}},
		secrets: map[string]*v1.Secret{"default/creds": {ObjectMeta: metav1.ObjectMeta{Name: "creds"}, Data: map[string][]byte{"password": []byte("s3cret"), "9lives": []byte("x")}}},
	}
	m, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: client, PodLogsDir: t.TempDir(), Objects: objs})
	require.NoError(t, err)
	ref := func(cm, secret, key string, optional bool) *v1.EnvVarSource {
		if cm != "" {
			return &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: cm}, Key: key, Optional: ptr.To(optional)}}
		}
		return &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: secret}, Key: key, Optional: ptr.To(optional)}}
	}
	c := v1.Container{Name: "c", Image: testImage,
		EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}, Prefix: "APP_"},
			{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "missing"}, Optional: ptr.To(true)}},
			{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}}}},
		Env: []v1.EnvVar{
			{Name: "APP_MODE", Value: "slow"}, // env overrides envFrom
			{Name: "PASSWORD", ValueFrom: ref("", "creds", "password", false)},
			{Name: "LEVEL", ValueFrom: ref("cfg", "", "LEVEL", false)},
			{Name: "GONE", ValueFrom: ref("nope", "", "x", true)}, // optional: not set
			{Name: "URL", Value: "http://$(APP_LEVEL)"},
		}}
	pod := podSpec("env", v1.RestartPolicyAlways, c)
	cfg, err := m.ContainerConfig(pod, &pod.Spec.Containers[0], kuberuntime.ContainerInput{})
	require.NoError(t, err)
	got := map[string]string{}
	for _, kv := range cfg.Envs {
		got[kv.Key] = string(kv.Value)
	}
	for k, want := range map[string]string{"APP_LEVEL": "debug", "APP_MODE": "slow", "PASSWORD": "s3cret", "LEVEL": "debug", "URL": "http://debug"} {
		assert.Equal(t, want, got[k], k)
	}
	assert.NotContains(t, got, "GONE")
	assert.Equal(t, "x", got["APP_bad-name"], "dashes are allowed in names")
	assert.Equal(t, "s3cret", got["password"])
	assert.Equal(t, "x", got["9lives"], "any name is passed on, as the kubelet v1.34+ (relaxed names)")

	for _, tc := range []struct {
		env  v1.EnvVar
		want string
	}{
		{v1.EnvVar{Name: "X", ValueFrom: ref("nope", "", "x", false)}, `env[0] (X): configmap "nope"`},
		{v1.EnvVar{Name: "X", ValueFrom: ref("cfg", "", "NOKEY", false)}, "couldn't find key NOKEY in ConfigMap default/cfg"},
		{v1.EnvVar{Name: "X", ValueFrom: ref("", "creds", "user", false)}, "couldn't find key user in Secret default/creds"},
	} {
		bad := podSpec("bad", v1.RestartPolicyAlways, v1.Container{Name: "c", Image: testImage, Env: []v1.EnvVar{tc.env}})
		_, err := m.ContainerConfig(bad, &bad.Spec.Containers[0], kuberuntime.ContainerInput{})
		assert.ErrorContains(t, err, tc.want)
	}
}
