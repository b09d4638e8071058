//go:build integration

package kuberuntime_test

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/nodekit-dev/nodekit/internal/testenv"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/kuberuntime"
)

const registryUser, registryPassword = "nodekit", "s3cret"

// basicAuth lets through requests with the registry's one account, and
// answers the others 401 with a Basic challenge, as a registry behind
// basic auth does.
func basicAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(registryUser)) != 1 ||
			subtle.ConstantTimeCompare([]byte(p), []byte(registryPassword)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="nodekit-test"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// startRegistry serves an in-memory registry behind basic auth on an
// ephemeral 127.0.0.1 port, tells the test containerd to reach it over
// plain HTTP (certs.d/<host>/hosts.toml), pushes the test image to it as
// <host>/nodekit/testbin:1 and returns the host.
func startRegistry(t *testing.T, cd testenv.Containerd) string {
	require.NotEmpty(t, cd.CertsDir, "NODEKIT_CONTAINERD_CERTS_D unset: run hack/containerd-up.sh again (it sets config_path)")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: basicAuth(registry.New(registry.Logger(log.New(io.Discard, "", 0)))),
		ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	host := l.Addr().String()

	dir := filepath.Join(cd.CertsDir, host)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	hosts := fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n  skip_verify = true\n",
		"http://"+host, "http://"+host)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(hosts), 0o644))

	img, err := tarball.ImageFromPath(filepath.Join(cd.ImageDir, "testbin.tar"), nil)
	require.NoError(t, err)
	ref, err := name.ParseReference(host+"/nodekit/testbin:1", name.Insecure)
	require.NoError(t, err)
	require.NoError(t, remote.Write(ref, img, remote.WithAuth(&authn.Basic{Username: registryUser, Password: registryPassword})))
	_, err = remote.Head(ref)
	require.Error(t, err, "the registry refuses anonymous reads")
	return host
}

func pullSecret(name, host, user, password string) v1.Secret {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	cfg := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, "http://"+host, auth)
	return v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Type: v1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(cfg)}}
}

// TestPullSecretsOnContainerd: containerd pulls from a registry behind
// basic auth with the credentials of the pod's dockerconfigjson pull
// secret, for a container's image and an image volume alike; without the
// secret, or with a wrong password, the pull fails with ErrImagePull,
// the registry's refusal in the message and the kubelet's events.
func TestPullSecretsOnContainerd(t *testing.T) {
	cd := testenv.NeedContainerd(t)
	client := cd.Dial(t)
	host := startRegistry(t, cd)
	image := host + "/nodekit/testbin:1"
	// The pulled image is the test image under other names (its tag and
	// its repo digest): CRI RemoveImage would remove the test image too,
	// so only the registry's names go.
	t.Cleanup(func() {
		ctr := func(args ...string) string {
			args = append([]string{"-a", strings.TrimPrefix(cd.Endpoint, "unix://"), "-n", "k8s.io", "images"}, args...)
			out, err := exec.Command(cd.Ctr, args...).Output()
			assert.NoError(t, err, "ctr %v", args)
			return string(out)
		}
		for _, ref := range strings.Fields(ctr("ls", "-q")) {
			if strings.HasPrefix(ref, host+"/") {
				ctr("rm", ref)
			}
		}
	})
	// containerd's error for an anonymous pull the registry refuses.
	const anonymous = "authorization failed: no basic auth credentials"
	getter := secrets(pullSecret("regcred", host, registryUser, registryPassword),
		pullSecret("wrongcred", host, registryUser, "wrong"))

	for _, tc := range []struct {
		name   string
		refs   []string
		volume bool // the registry's image is an image volume, not the container's image
		// wantErr: the container waits with ErrImagePull, with containerd's
		// words for the registry's refusal in the message.
		wantErr    string
		wantEvents []string
	}{
		{name: "image with the secret", refs: []string{"regcred"},
			wantEvents: []string{`spec.containers{app} Normal Pulling: Pulling image "` + image + `"`}},
		{name: "image without a secret", wantErr: anonymous,
			wantEvents: []string{`spec.containers{app} Warning Failed: Error: ErrImagePull`}},
		{name: "image with a wrong password", refs: []string{"wrongcred"}, wantErr: "401 Unauthorized"},
		{name: "image with a missing secret", refs: []string{"gone"}, wantErr: anonymous,
			wantEvents: []string{` Warning FailedToRetrieveImagePullSecret: Unable to retrieve some image pull secrets (gone); attempting to pull the image may not succeed.`}},
		{name: "wrong, then right", refs: []string{"wrongcred", "regcred"}},
		{name: "image volume with the secret", refs: []string{"regcred"}, volume: true,
			wantEvents: []string{` Normal Pulling: Pulling image "` + image + `"`}},
		{name: "image volume without a secret", volume: true, wantErr: anonymous,
			wantEvents: []string{`spec.containers{app} Warning Failed: Error: ErrImagePull`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			m, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: client, PodLogsDir: t.TempDir(),
				Recorder: rec, Mounts: imageMounts, PullSecrets: getter})
			require.NoError(t, err)
			ctx := context.Background()
			uid := types.UID("pull-" + rand.String(8))
			c := v1.Container{Name: "app", Image: image, Args: []string{"sleep"}, ImagePullPolicy: v1.PullAlways}
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pull", Namespace: "default", UID: uid},
				Spec: v1.PodSpec{Containers: []v1.Container{c}}}
			if tc.volume {
				pod.Spec.Containers[0].Image, pod.Spec.Containers[0].ImagePullPolicy = testenv.TestImage, v1.PullNever
				pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
				pod.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
					Image: &v1.ImageVolumeSource{Reference: image, PullPolicy: v1.PullAlways}}}}
			}
			for _, r := range tc.refs {
				pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, v1.LocalObjectReference{Name: r})
			}
			cleanupPod(t, m, client, uid)

			res := m.SyncPod(ctx, pod, nil, kuberuntime.SyncOptions{CgroupParent: testenv.CgroupParent(string(uid))})
			app := step(res, kuberuntime.ActionStartContainer, "app")
			require.NotNil(t, app, "%s", res)
			events := rec.take()
			for _, e := range events {
				t.Log(e)
			}
			for _, want := range tc.wantEvents {
				assert.Contains(t, events, "pull "+want)
			}
			status, err := m.GetPodStatus(ctx, uid, pod.Name, pod.Namespace)
			require.NoError(t, err)
			if tc.wantErr != "" {
				assert.Equal(t, "ErrImagePull", app.Reason())
				t.Logf("message: %s", app.Message)
				assert.Contains(t, app.Message, `pulling image "`+image+`": `)
				assert.Contains(t, app.Message, tc.wantErr, "the registry's refusal")
				assert.Nil(t, status.FindContainerStatusByName("app"), "not created")
				return
			}
			require.NoError(t, app.Err, "%s", res)
			cs := status.FindContainerStatusByName("app")
			require.NotNil(t, cs)
			assert.Equal(t, kc.ContainerStateRunning, cs.State)
			if tc.volume {
				stdout, stderr, err := client.ExecSync(ctx, cs.ID, []string{"/testbin", "read", "/data/testbin"}, 30*time.Second)
				require.NoError(t, err, "%s", stderr)
				assert.Greater(t, len(stdout), 1<<16, "the image's /testbin, read through the image volume")
			}
		})
	}
}
