package volume

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/podpath"
)

// tokenServer issues numbered tokens valid for the requested lifetime.
type tokenServer struct {
	clock *clocktesting.FakeClock
	mu    sync.Mutex
	reqs  []*authv1.TokenRequest
	sa    []string
	fail  error
}

func (s *tokenServer) CreateToken(_ context.Context, ns, sa string, req *authv1.TokenRequest) (*authv1.TokenRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return nil, s.fail
	}
	s.reqs = append(s.reqs, req.DeepCopy())
	s.sa = append(s.sa, ns+"/"+sa)
	out := req.DeepCopy()
	out.Status.Token = fmt.Sprintf("token-%d", len(s.reqs))
	out.Status.ExpirationTimestamp = metav1.NewTime(s.clock.Now().Add(time.Duration(*req.Spec.ExpirationSeconds) * time.Second))
	return out, nil
}

func TestDownwardAPIVolume(t *testing.T) {
	m, err := New(Config{Layout: podpath.Layout{RootDir: t.TempDir()}, Plugins: []Plugin{DownwardAPI{
		NodeAllocatable: func() v1.ResourceList { return v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")} }}}})
	require.NoError(t, err)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1", Labels: map[string]string{"app": "web", "tier": "front"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")}}}},
			Volumes: []v1.Volume{{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{
				DefaultMode: ptr.To[int32](0o640),
				Items: []v1.DownwardAPIVolumeFile{
					{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}},
					{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}, Mode: ptr.To[int32](0o600)},
					{Path: "res/cpu_m", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "c", Resource: "requests.cpu", Divisor: resource.MustParse("1m")}},
					{Path: "res/mem_limit", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "c", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}},
				}}}}}}}
	dir, err := m.SetUp(pod, &pod.Spec.Volumes[0])
	require.NoError(t, err)
	assert.Equal(t, filepath.Join("pods", "u1", "volumes", "kubernetes.io~downward-api", "info"), rel(t, m, dir))
	assert.Equal(t, "p", read(t, filepath.Join(dir, "name")))
	assert.Equal(t, "app=\"web\"\ntier=\"front\"", read(t, filepath.Join(dir, "labels")))
	assert.Equal(t, "250", read(t, filepath.Join(dir, "res/cpu_m")))
	assert.Equal(t, "1024", read(t, filepath.Join(dir, "res/mem_limit")), "no limit: the node's allocatable")
	assertMode(t, filepath.Join(dir, "name"), 0o640)
	assertMode(t, filepath.Join(dir, "labels"), 0o600)

	// Labels change: the next sync writes them.
	pod.Labels["tier"] = "back"
	require.NoError(t, m.SetUpAll(pod))
	assert.Equal(t, "app=\"web\"\ntier=\"back\"", read(t, filepath.Join(dir, "labels")))

	for _, tc := range []struct {
		item v1.DownwardAPIVolumeFile
		err  string
	}{
		{v1.DownwardAPIVolumeFile{Path: "x", FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}},
			`volumes[info]: downwardAPI.items[0].fieldRef.fieldPath: unsupported value "status.podIP"`},
		{v1.DownwardAPIVolumeFile{Path: "x", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "nope", Resource: "limits.cpu"}},
			`volumes[info]: downwardAPI.items[0].resourceFieldRef.containerName: Not found: "nope"`},
		{v1.DownwardAPIVolumeFile{Path: "x", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "c", Resource: "limits.gpu"}},
			`volumes[info]: downwardAPI.items[0].resourceFieldRef.resource: unsupported value "limits.gpu"`},
		{v1.DownwardAPIVolumeFile{Path: "../x", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}},
			`must be relative, without '..'`},
	} {
		pod.Spec.Volumes[0].DownwardAPI.Items = []v1.DownwardAPIVolumeFile{tc.item}
		assert.ErrorContains(t, m.SetUpAll(pod), tc.err)
	}
}

func rel(t *testing.T, m *Manager, dir string) string {
	r, err := filepath.Rel(m.layout.Root(), dir)
	require.NoError(t, err)
	return r
}

func assertMode(t *testing.T, p string, want os.FileMode) {
	t.Helper()
	info, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, want, info.Mode().Perm(), p)
}

func TestProjectedVolume(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := &tokenServer{clock: clk}
	tokens, err := NewTokens(srv, clk)
	require.NoError(t, err)
	objs := &objects{
		cms:     map[string]*v1.ConfigMap{"ca": {Data: map[string]string{"ca.crt": "CA", "other": "o"}}},
		secrets: map[string]*v1.Secret{"creds": {Data: map[string][]byte{"user": []byte("u"), "pass": []byte("p")}}},
	}
	proj := Projected{Objects: objs, Tokens: tokens}
	m, err := New(Config{Layout: podpath.Layout{RootDir: t.TempDir()}, Plugins: []Plugin{proj}})
	require.NoError(t, err)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"},
		Spec: v1.PodSpec{ServiceAccountName: "builder", Volumes: []v1.Volume{{Name: "all", VolumeSource: v1.VolumeSource{
			Projected: &v1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o440), Sources: []v1.VolumeProjection{
				{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", Audience: "vault", ExpirationSeconds: ptr.To[int64](600)}},
				{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "ca"},
					Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}}},
				{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "absent"}, Optional: ptr.To(true)}},
				{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{
					{Path: "podname", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}, Mode: ptr.To[int32](0o400)}}}},
			}}}}}}}
	dir, err := m.SetUp(pod, &pod.Spec.Volumes[0])
	require.NoError(t, err)
	assert.Equal(t, filepath.Join("pods", "u1", "volumes", "kubernetes.io~projected", "all"), rel(t, m, dir))
	assert.Equal(t, "token-1", read(t, filepath.Join(dir, "token")))
	assert.Equal(t, "CA", read(t, filepath.Join(dir, "ca.crt")))
	assert.NoFileExists(t, filepath.Join(dir, "other"), "items pick keys")
	assert.Equal(t, "u", read(t, filepath.Join(dir, "user")))
	assert.Equal(t, "p", read(t, filepath.Join(dir, "pass")))
	assert.Equal(t, "p", read(t, filepath.Join(dir, "podname")))
	assertMode(t, filepath.Join(dir, "token"), 0o440)
	assertMode(t, filepath.Join(dir, "podname"), 0o400)

	require.Len(t, srv.reqs, 1)
	assert.Equal(t, "ns/builder", srv.sa[0])
	assert.Equal(t, []string{"vault"}, srv.reqs[0].Spec.Audiences)
	assert.Equal(t, int64(600), *srv.reqs[0].Spec.ExpirationSeconds)
	assert.Equal(t, &authv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "u1"}, srv.reqs[0].Spec.BoundObjectRef,
		"bound to the pod, so NodeRestriction allows it and the token dies with the pod")

	// Syncs within 80% of the lifetime (less the jitter) reuse the token.
	clk.Step(400 * time.Second)
	require.NoError(t, m.SetUpAll(pod))
	assert.Len(t, srv.reqs, 1)
	// Past 80%: refreshed, and the volume has the new one.
	clk.Step(81 * time.Second)
	require.NoError(t, m.SetUpAll(pod))
	assert.Len(t, srv.reqs, 2)
	assert.Equal(t, "token-2", read(t, filepath.Join(dir, "token")))
	// The API server is away: the token, still valid, is kept.
	srv.fail = errors.New("connection refused")
	clk.Step(500 * time.Second)
	require.NoError(t, m.SetUpAll(pod))
	assert.Equal(t, "token-2", read(t, filepath.Join(dir, "token")))
	// Expired and no new one: an error naming the source.
	clk.Step(200 * time.Second)
	assert.ErrorContains(t, m.SetUpAll(pod),
		"volumes[all]: projected.sources[0].serviceAccountToken: token of serviceaccount ns/builder: connection refused")
	srv.fail = nil

	// A missing required source is an error naming it.
	delete(objs.cms, "ca")
	assert.ErrorContains(t, m.SetUpAll(pod), `volumes[all]: projected.sources[1].configMap "ca": configmaps "ca" not found`)
	objs.cms["ca"] = &v1.ConfigMap{Data: map[string]string{"ca.crt": "CA"}}

	// The pod goes: its tokens go with it.
	require.Equal(t, 1, tokens.cached())
	require.NoError(t, m.TearDown(pod))
	assert.Equal(t, 0, tokens.cached())
	assert.NoDirExists(t, dir)
}

func TestProjectedRefusals(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}}
	for _, tc := range []struct {
		source v1.VolumeProjection
		err    string
	}{
		{v1.VolumeProjection{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "t"}},
			"projected.sources[0].serviceAccountToken: needs an API server (this node has none)"},
		{v1.VolumeProjection{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "x"}}},
			`projected.sources[0].configMap "x": needs an API server (this node has none)`},
		{v1.VolumeProjection{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Path: "b"}},
			"projected.sources[0].clusterTrustBundle: Unsupported value"},
		{v1.VolumeProjection{}, "projected.sources[0]: Required value: one source"},
	} {
		vol := &v1.Volume{Name: "v", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{tc.source}}}}
		m, err := New(Config{Layout: podpath.Layout{RootDir: t.TempDir()}, Plugins: []Plugin{Projected{}}})
		require.NoError(t, err)
		_, err = m.SetUp(pod, vol)
		assert.ErrorContains(t, err, tc.err)
	}
}

func TestTokensDefaultServiceAccountAndAudience(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	srv := &tokenServer{clock: clk}
	tokens, err := NewTokens(srv, clk)
	require.NoError(t, err)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}}
	tok, err := tokens.Token(context.Background(), pod, &v1.ServiceAccountTokenProjection{Path: "t"})
	require.NoError(t, err)
	assert.Equal(t, "token-1", tok)
	assert.Equal(t, "ns/default", srv.sa[0])
	assert.Nil(t, srv.reqs[0].Spec.Audiences, "no audience: the API server's own")
	assert.Equal(t, int64(DefaultTokenExpirationSeconds), *srv.reqs[0].Spec.ExpirationSeconds)

	// Another audience, or another pod, is another token.
	_, err = tokens.Token(context.Background(), pod, &v1.ServiceAccountTokenProjection{Path: "t", Audience: "a"})
	require.NoError(t, err)
	other := pod.DeepCopy()
	other.UID = "u2"
	_, err = tokens.Token(context.Background(), other, &v1.ServiceAccountTokenProjection{Path: "t"})
	require.NoError(t, err)
	assert.Len(t, srv.reqs, 3)
	assert.Equal(t, 3, tokens.cached())

	// Expired tokens are dropped even if no one forgets their pod.
	clk.Step(2 * time.Hour)
	tokens.ForgetPod("u2")
	_, err = tokens.Token(context.Background(), pod, &v1.ServiceAccountTokenProjection{Path: "t"})
	require.NoError(t, err)
	assert.Equal(t, 1, tokens.cached())

	_, err = NewTokens(nil, nil)
	assert.EqualError(t, err, "volume: NewTokens: requester is nil")
}
