package credentials_test

import (
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit-dev/nodekit/credentials"
)

func jsonSecret(name, config string) v1.Secret {
	return v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Type: v1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(config)}}
}

func cfgSecret(name, config string) v1.Secret {
	return v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Type: v1.SecretTypeDockercfg,
		Data: map[string][]byte{v1.DockerConfigKey: []byte(config)}}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// users lists the usernames of auths, in order: which credentials, which order.
func users(auths []credentials.AuthConfig) []string {
	var out []string
	for _, a := range auths {
		out = append(out, a.Username)
	}
	return out
}

func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		name    string
		secrets []v1.Secret
		image   string
		want    []string
	}{
		{"no secrets", nil, "busybox", nil},
		{"host match", []v1.Secret{jsonSecret("a", `{"auths":{"registry.io":{"username":"u","password":"p"}}}`)},
			"registry.io/app:1", []string{"u"}},
		{"other host", []v1.Secret{jsonSecret("a", `{"auths":{"registry.io":{"username":"u"}}}`)},
			"other.io/app:1", nil},
		{"scheme and /v2/ dropped", []v1.Secret{jsonSecret("a", `{"auths":{"https://registry.io/v2/":{"username":"u"}}}`)},
			"registry.io/app", []string{"u"}},
		{"http scheme", []v1.Secret{jsonSecret("a", `{"auths":{"http://127.0.0.1:5000":{"username":"u"}}}`)},
			"127.0.0.1:5000/app:1", []string{"u"}},
		{"port must match", []v1.Secret{jsonSecret("a", `{"auths":{"registry.io:5000":{"username":"u"}}}`)},
			"registry.io/app", nil},
		{"port given both sides", []v1.Secret{jsonSecret("a", `{"auths":{"registry.io:5000":{"username":"u"}}}`)},
			"registry.io:5000/app", []string{"u"}},
		{"glob label", []v1.Secret{jsonSecret("a", `{"auths":{"*.registry.io":{"username":"u"}}}`)},
			"eu.registry.io/app", []string{"u"}},
		{"glob does not cross labels", []v1.Secret{jsonSecret("a", `{"auths":{"*.registry.io":{"username":"u"}}}`)},
			"a.eu.registry.io/app", nil},
		{"glob needs a label", []v1.Secret{jsonSecret("a", `{"auths":{"*.registry.io":{"username":"u"}}}`)},
			"registry.io/app", nil},
		{"partial glob", []v1.Secret{jsonSecret("a", `{"auths":{"registry-*.io":{"username":"u"}}}`)},
			"registry-eu.io/app", []string{"u"}},
		{"path prefix", []v1.Secret{jsonSecret("a", `{"auths":{"registry.io/team":{"username":"u"}}}`)},
			"registry.io/team/app", []string{"u"}},
		{"path is a string prefix", []v1.Secret{jsonSecret("a", `{"auths":{"registry.io/team":{"username":"u"}}}`)},
			"registry.io/teamb/app", []string{"u"}},
		{"path not a prefix", []v1.Secret{jsonSecret("a", `{"auths":{"registry.io/team":{"username":"u"}}}`)},
			"registry.io/other/app", nil},
		{"longer path first", []v1.Secret{jsonSecret("a",
			`{"auths":{"registry.io":{"username":"host"},"registry.io/team":{"username":"team"},"registry.io/team/app":{"username":"app"}}}`)},
			"registry.io/team/app:1", []string{"app", "team", "host"}},
		{"reverse lexical order of keys", []v1.Secret{jsonSecret("a",
			`{"auths":{"*.registry.io":{"username":"glob"},"eu.registry.io":{"username":"exact"}}}`)},
			"eu.registry.io/app", []string{"exact", "glob"}},
		{"one key, secrets in order", []v1.Secret{
			jsonSecret("a", `{"auths":{"registry.io":{"username":"first"}}}`),
			cfgSecret("b", `{"registry.io":{"username":"second"}}`),
			jsonSecret("c", `{"auths":{"https://registry.io":{"username":"third"}}}`)},
			"registry.io/app", []string{"first", "second", "third"}},
		{"keys across secrets sorted", []v1.Secret{
			jsonSecret("a", `{"auths":{"registry.io":{"username":"host"}}}`),
			jsonSecret("b", `{"auths":{"registry.io/team":{"username":"team"}}}`)},
			"registry.io/team/app", []string{"team", "host"}},
		{"auth field wins", []v1.Secret{jsonSecret("a", `{"auths":{"registry.io":{"username":"x","auth":"`+b64("u:p:q")+`"}}}`)},
			"registry.io/app", []string{"u"}},
		{"unpadded auth", []v1.Secret{jsonSecret("a", `{"auths":{"registry.io":{"auth":"`+base64.RawStdEncoding.EncodeToString([]byte("u:pw"))+`"}}}`)},
			"registry.io/app", []string{"u"}},
		{"docker hub bare name", []v1.Secret{jsonSecret("a", `{"auths":{"https://index.docker.io/v1/":{"username":"hub"}}}`)},
			"busybox", []string{"hub"}},
		{"docker hub user image", []v1.Secret{jsonSecret("a", `{"auths":{"https://index.docker.io/v1/":{"username":"hub"}}}`)},
			"me/app:1", []string{"hub"}},
		{"docker.io key", []v1.Secret{jsonSecret("a", `{"auths":{"docker.io":{"username":"dio"},"index.docker.io":{"username":"hub"}}}`)},
			"busybox", []string{"dio"}},
		{"docker hub key not for other registries", []v1.Secret{jsonSecret("a", `{"auths":{"index.docker.io":{"username":"hub"}}}`)},
			"registry.io/app", nil},
		{"localhost is a host", []v1.Secret{jsonSecret("a", `{"auths":{"index.docker.io":{"username":"hub"},"localhost:5000":{"username":"l"}}}`)},
			"localhost:5000/app", []string{"l"}},
		{"digest", []v1.Secret{jsonSecret("a", `{"auths":{"registry.io":{"username":"u"}}}`)},
			"registry.io/app@sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", []string{"u"}},
		{"other secret types skipped", []v1.Secret{
			{Type: v1.SecretTypeOpaque, Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(`{"auths":{"registry.io":{"username":"o"}}}`)}},
			{Type: v1.SecretTypeDockerConfigJson, Data: map[string][]byte{v1.DockerConfigKey: []byte(`{"registry.io":{"username":"k"}}`)}},
			jsonSecret("empty", "")},
			"registry.io/app", nil},
		{"bad key skipped", []v1.Secret{jsonSecret("a", `{"auths":{"%zz":{"username":"bad"},"registry.io":{"username":"u"}}}`)},
			"registry.io/app", []string{"u"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := credentials.NewKeyring(tc.secrets)
			require.NoError(t, err)
			got, err := k.Lookup(tc.image)
			require.NoError(t, err)
			assert.Equal(t, tc.want, users(got))
		})
	}
}

func TestLookupFields(t *testing.T) {
	k, err := credentials.NewKeyring([]v1.Secret{
		jsonSecret("a", `{"auths":{"registry.io":{"username":"u","password":"p","email":"e@x"}}}`),
		cfgSecret("b", `{"registry.io":{"auth":"`+b64("v:pass:word")+`"}}`)})
	require.NoError(t, err)
	got, err := k.Lookup("registry.io/app")
	require.NoError(t, err)
	assert.Equal(t, []credentials.AuthConfig{
		{Username: "u", Password: "p", Email: "e@x", Secret: types.NamespacedName{Namespace: "ns", Name: "a"}},
		{Username: "v", Password: "pass:word", Secret: types.NamespacedName{Namespace: "ns", Name: "b"}},
	}, got)
	assert.Equal(t, 1, k.Len())
}

func TestNewKeyringErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		secret  v1.Secret
		key     string
		message string
	}{
		{"not JSON", jsonSecret("a", `{`), v1.DockerConfigJsonKey, "pull secret ns/a: .dockerconfigjson: unexpected end of JSON input"},
		{"auths not an object", jsonSecret("a", `{"auths":"x"}`), v1.DockerConfigJsonKey, ""},
		{"auth not base64", jsonSecret("a", `{"auths":{"r.io":{"auth":"!!"}}}`), v1.DockerConfigJsonKey, ""},
		{"auth without colon", cfgSecret("b", `{"r.io":{"auth":"`+b64("user")+`"}}`), v1.DockerConfigKey,
			"pull secret ns/b: .dockercfg: unable to parse auth field, must be formatted as base64(username:password)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := credentials.NewKeyring([]v1.Secret{tc.secret})
			var se *credentials.SecretError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tc.key, se.Key)
			assert.Equal(t, tc.secret.Name, se.Secret.Name)
			if tc.message != "" {
				assert.EqualError(t, err, tc.message)
			}
		})
	}
}

func TestLookupBadImage(t *testing.T) {
	k, err := credentials.NewKeyring([]v1.Secret{jsonSecret("a", `{"auths":{"registry.io":{"username":"u"}}}`)})
	require.NoError(t, err)
	_, err = k.Lookup("Registry.io/UPPER")
	var ie *credentials.ImageError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "Registry.io/UPPER", ie.Image)

	empty, err := credentials.NewKeyring(nil)
	require.NoError(t, err)
	got, err := empty.Lookup("Registry.io/UPPER")
	require.NoError(t, err, "an empty keyring does not parse the image")
	assert.Empty(t, got)
}

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		key, repo string
		want      bool
	}{
		{"r.io", "r.io/a", true},
		{"*.r.io", "x.r.io/a", true},
		{"*.*.io", "x.r.io/a", true},
		{"r.io:5000", "r.io:5000/a", true},
		{"r.io", "r.io:5000/a", false},
		{"r.io/a/b", "r.io/a", false},
		{"[.r.io", "x.r.io/a", false}, // malformed glob
		{"127.0.0.1:5000", "127.0.0.1:5000/a", true},
		{"127.0.0.*:5000", "127.0.0.1:5000/a", true},
	} {
		t.Run(tc.key+" "+tc.repo, func(t *testing.T) {
			assert.Equal(t, tc.want, credentials.Match(tc.key, tc.repo))
		})
	}
}
