package kuberuntime_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

// registryImages is a registry with one account in front of the runtime's
// pulls: a pull with that user and password, or without credentials when
// anonymous, goes through; any other fails as a registry refuses it. It
// records what each pull offered: "user:password", "-" for none.
type registryImages struct {
	kuberuntime.ImageService
	user, password string
	anonymous      bool

	mu    sync.Mutex
	tried []string
}

func (r *registryImages) PullImage(ctx context.Context, spec *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig,
	sc *runtimeapi.PodSandboxConfig) (string, error) {
	offered := "-"
	if auth != nil {
		offered = auth.Username + ":" + auth.Password
	}
	r.mu.Lock()
	r.tried = append(r.tried, offered)
	r.mu.Unlock()
	switch {
	case auth == nil && !r.anonymous:
		return "", errors.New("pull access denied: authorization required")
	case auth != nil && (auth.Username != r.user || auth.Password != r.password || auth.Auth != "" || auth.ServerAddress != ""):
		return "", fmt.Errorf("401 Unauthorized for %s", auth.Username)
	}
	return r.ImageService.PullImage(ctx, spec, nil, sc)
}

func (r *registryImages) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.tried
	r.tried = nil
	return out
}

// secrets is a SecretGetter over a fixed set; the others are NotFound.
func secrets(list ...v1.Secret) kuberuntime.SecretGetterFunc {
	return func(_ context.Context, namespace, name string) (*v1.Secret, error) {
		for i := range list {
			if list[i].Namespace == namespace && list[i].Name == name {
				return &list[i], nil
			}
		}
		return nil, apierrors.NewNotFound(v1.Resource("secrets"), name)
	}
}

func dockerSecret(name, registry, user, password string) v1.Secret {
	cfg := fmt.Sprintf(`{"auths":{%q:{"username":%q,"password":%q}}}`, registry, user, password)
	return v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Type: v1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(cfg)}}
}

// TestSyncPodPullSecrets: the kubelet's getPullSecretsForPod, its keyring
// lookup and kuberuntime's PullImage: the pod's pull secrets' credentials
// matching the image's registry are tried in order until one works;
// without a matching one the pull is anonymous; when all fail there is no
// anonymous try and the message is every error. A secret that cannot be
// read is skipped, and, when a pull then fails, named in a
// FailedToRetrieveImagePullSecret event on the pod.
func TestSyncPodPullSecrets(t *testing.T) {
	const image = "registry.example.com:5000/team/app:1"
	good := dockerSecret("good", "registry.example.com:5000", "u", "p")
	wrong := dockerSecret("wrong", "https://registry.example.com:5000/v2/", "u", "nope")
	elsewhere := dockerSecret("elsewhere", "other.example.com", "x", "y")
	malformed := v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "malformed"}, Type: v1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(`{"auths":{"registry.example.com:5000":{"auth":"bm9jb2xvbg=="}}}`)}}
	for _, tc := range []struct {
		name       string
		getter     kuberuntime.SecretGetter // nil: ManagerConfig.PullSecrets unset
		refs       []string
		anonymous  bool
		wantTried  []string
		wantReason string // "" = runs
		wantMsg    string
		wantEvents []string
		noEvents   []string
	}{
		{name: "no pull secrets: anonymous", getter: secrets(good), anonymous: true, wantTried: []string{"-"}},
		{name: "matching secret", getter: secrets(good), refs: []string{"good"}, wantTried: []string{"u:p"}},
		{name: "each in turn until one works", getter: secrets(good, wrong), refs: []string{"wrong", "good"},
			wantTried: []string{"u:nope", "u:p"}},
		{name: "no match: anonymous", getter: secrets(elsewhere), refs: []string{"elsewhere"}, anonymous: true, wantTried: []string{"-"}},
		{name: "no match, registry wants credentials", getter: secrets(elsewhere), refs: []string{"elsewhere"}, wantTried: []string{"-"},
			wantReason: "ErrImagePull", wantMsg: `pulling image "` + image + `": pull access denied: authorization required`},
		{name: "all fail: no anonymous try", getter: secrets(wrong, good), refs: []string{"wrong"}, anonymous: true,
			wantTried: []string{"u:nope"}, wantReason: "ErrImagePull", wantMsg: `pulling image "` + image + `": 401 Unauthorized for u`,
			wantEvents: []string{`ps spec.containers{app} Warning Failed: Failed to pull image "` + image + `": 401 Unauthorized for u`,
				`ps spec.containers{app} Warning Failed: Error: ErrImagePull`}},
		{name: "all fail: every error", getter: secrets(wrong, dockerSecret("wrong2", "registry.example.com:5000", "v", "w")),
			refs: []string{"wrong", "wrong2"}, wantTried: []string{"u:nope", "v:w"}, wantReason: "ErrImagePull",
			wantMsg: `pulling image "` + image + `": [401 Unauthorized for u, 401 Unauthorized for v]`},
		{name: "missing secret skipped", getter: secrets(good), refs: []string{"gone", "good"}, wantTried: []string{"u:p"},
			noEvents: []string{"FailedToRetrieveImagePullSecret"}},
		{name: "missing secrets named when the pull fails", getter: secrets(wrong), refs: []string{"gone", "", "wrong", "gone2"},
			wantTried: []string{"u:nope"}, wantReason: "ErrImagePull",
			wantEvents: []string{`ps  Warning FailedToRetrieveImagePullSecret: Unable to retrieve some image pull secrets (gone, gone2); attempting to pull the image may not succeed.`}},
		{name: "no secret getter: every secret missing", refs: []string{"good"}, wantTried: []string{"-"}, wantReason: "ErrImagePull",
			wantEvents: []string{`ps  Warning FailedToRetrieveImagePullSecret: Unable to retrieve some image pull secrets (good); attempting to pull the image may not succeed.`}},
		{name: "malformed secret: no pull", getter: secrets(malformed, good), refs: []string{"good", "malformed"},
			wantReason: "pull secret default/malformed: .dockerconfigjson: unable to parse auth field, must be formatted as base64(username:password)",
			wantEvents: []string{`ps spec.containers{app} Warning Failed: Error: pull secret default/malformed: .dockerconfigjson: unable to parse auth field, must be formatted as base64(username:password)`},
			noEvents:   []string{"Pulling"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(1700000000, 0))
			f, client := startFake(t, fake.WithClock(clk))
			f.AllowPull(image)
			reg := &registryImages{ImageService: client, user: "u", password: "p", anonymous: tc.anonymous}
			rec := &recorder{}
			m, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: reg, Clock: clk, PodLogsDir: t.TempDir(),
				DNS: kuberuntime.HostDNS("", nil, ""), Recorder: rec, PullSecrets: tc.getter})
			require.NoError(t, err)
			e := &managerEnv{t: t, clock: clk, client: client, m: m, ctx: t.Context()}
			pod := podSpec("ps", v1.RestartPolicyAlways, v1.Container{Name: "app", Image: image, Args: []string{"serve"}})
			for _, r := range tc.refs {
				pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, v1.LocalObjectReference{Name: r})
			}
			res, st := e.sync(pod, nil)
			assert.Equal(t, tc.wantTried, reg.take())
			app := step(res, kuberuntime.ActionStartContainer, "app")
			require.NotNil(t, app)
			events := rec.take()
			for _, want := range tc.wantEvents {
				assert.Contains(t, events, want)
			}
			for _, reason := range tc.noEvents {
				for _, ev := range events {
					assert.NotContains(t, ev, " "+reason+": ")
				}
			}
			if tc.wantReason == "" {
				require.NoError(t, app.Err)
				cs := st.FindContainerStatusByName("app")
				require.NotNil(t, cs)
				assert.Equal(t, kc.ContainerStateRunning, cs.State)
				return
			}
			assert.Equal(t, tc.wantReason, app.Reason())
			if tc.wantMsg != "" {
				assert.Contains(t, app.Message, tc.wantMsg)
			}
			assert.Nil(t, st.FindContainerStatusByName("app"))
		})
	}
}

// TestSyncPodPullSecretsImageVolume: an image volume is pulled with the
// pod's pull secrets as its containers' images are, and its failure is
// the mounting container's, with the missing secrets' event.
func TestSyncPodPullSecretsImageVolume(t *testing.T) {
	const data = "registry.example.com:5000/data:1"
	for _, tc := range []struct {
		name       string
		refs       []string
		wantTried  []string
		wantReason string
	}{
		{name: "with the secret", refs: []string{"good"}, wantTried: []string{"u:p"}},
		{name: "without", refs: []string{"gone"}, wantTried: []string{"-"}, wantReason: "ErrImagePull"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(1700000000, 0))
			f, client := startFake(t, fake.WithClock(clk))
			f.AllowPull(data)
			reg := &registryImages{ImageService: client, user: "u", password: "p"}
			rec := &recorder{}
			m, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: reg, Clock: clk, PodLogsDir: t.TempDir(),
				DNS: kuberuntime.HostDNS("", nil, ""), Recorder: rec, Mounts: imageMounts,
				PullSecrets: secrets(dockerSecret("good", "registry.example.com:5000", "u", "p"))})
			require.NoError(t, err)
			e := &managerEnv{t: t, clock: clk, client: client, m: m, ctx: t.Context()}
			pod := podSpec("iv", v1.RestartPolicyAlways, v1.Container{Name: "reader", Image: testImage, Args: []string{"serve"},
				VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}}})
			pod.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: data,
				PullPolicy: v1.PullAlways}}}}
			for _, r := range tc.refs {
				pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, v1.LocalObjectReference{Name: r})
			}
			res, st := e.sync(pod, nil)
			assert.Equal(t, tc.wantTried, reg.take(), "the container's own image is present: only the volume is pulled")
			reader := step(res, kuberuntime.ActionStartContainer, "reader")
			require.NotNil(t, reader)
			if tc.wantReason == "" {
				require.NoError(t, reader.Err)
				require.NotNil(t, st.FindContainerStatusByName("reader"))
				return
			}
			assert.Equal(t, tc.wantReason, reader.Reason())
			assert.Contains(t, rec.take(),
				`iv  Warning FailedToRetrieveImagePullSecret: Unable to retrieve some image pull secrets (gone); attempting to pull the image may not succeed.`)
		})
	}
}

// TestSyncPodPullSecretsReadOncePerSync: the secrets are read once per
// sync, however many images it pulls, and not at all when nothing is
// pulled.
func TestSyncPodPullSecretsReadOncePerSync(t *testing.T) {
	const a, b = "registry.example.com/a:1", "registry.example.com/b:1"
	clk := clocktesting.NewFakeClock(time.Unix(1700000000, 0))
	f, client := startFake(t, fake.WithClock(clk))
	f.AllowPull(a, b)
	var mu sync.Mutex
	reads := 0
	good := dockerSecret("good", "registry.example.com", "u", "p")
	getter := kuberuntime.SecretGetterFunc(func(ctx context.Context, ns, name string) (*v1.Secret, error) {
		mu.Lock()
		reads++
		mu.Unlock()
		return secrets(good)(ctx, ns, name)
	})
	reg := &registryImages{ImageService: client, user: "u", password: "p"}
	m, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: reg, Clock: clk, PodLogsDir: t.TempDir(),
		DNS: kuberuntime.HostDNS("", nil, ""), PullSecrets: getter})
	require.NoError(t, err)
	e := &managerEnv{t: t, clock: clk, client: client, m: m, ctx: t.Context()}
	pod := podSpec("two", v1.RestartPolicyAlways,
		v1.Container{Name: "a", Image: a, Args: []string{"serve"}, ImagePullPolicy: v1.PullIfNotPresent},
		v1.Container{Name: "b", Image: b, Args: []string{"serve"}, ImagePullPolicy: v1.PullIfNotPresent})
	pod.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: "good"}}
	res, _ := e.sync(pod, nil)
	require.NoError(t, res.Err())
	assert.Equal(t, []string{"u:p", "u:p"}, reg.take())
	assert.Equal(t, 1, reads)

	pod2 := podSpec("present", v1.RestartPolicyAlways,
		v1.Container{Name: "a", Image: a, Args: []string{"serve"}, ImagePullPolicy: v1.PullIfNotPresent})
	pod2.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: "good"}}
	res, _ = e.sync(pod2, nil)
	require.NoError(t, res.Err())
	assert.Empty(t, reg.take())
	assert.Equal(t, 1, reads, "no pull, no read")
}
