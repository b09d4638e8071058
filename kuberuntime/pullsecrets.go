package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit-dev/nodekit/credentials"
)

// SecretGetter reads one Secret, as the kubelet's secret manager does for
// pull secrets; *volume/apiclient.Objects implements it.
type SecretGetter interface {
	GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// SecretGetterFunc adapts a function to SecretGetter.
type SecretGetterFunc func(ctx context.Context, namespace, name string) (*v1.Secret, error)

// GetSecret calls f.
func (f SecretGetterFunc) GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	return f(ctx, namespace, name)
}

// errNoSecretGetter is a pull secret's failure to load without an API
// server (ManagerConfig.PullSecrets nil).
var errNoSecretGetter = errors.New("no API server to read secrets from (ManagerConfig.PullSecrets is nil)")

// podCredentials is a pod's pull secrets for one SyncPod: read on the
// first pull that needs them (the kubelet's getPullSecretsForPod, which
// reads them on every sync), the keyring built from them once. Not safe
// for concurrent use; SyncPod pulls one image at a time.
type podCredentials struct {
	m   *Manager
	pod *v1.Pod

	loaded  bool
	keyring *credentials.Keyring
	err     error
	// missing are the pull secrets that could not be read, by name.
	missing []string
}

// lookup is the credentials to try for image, in order (none: pull
// anonymously); an error is a pull secret that does not parse or an
// image name that does not, as the kubelet's lookupPullCredentials.
func (pc *podCredentials) lookup(ctx context.Context, image string) ([]credentials.AuthConfig, error) {
	if pc == nil || len(pc.pod.Spec.ImagePullSecrets) == 0 {
		return nil, nil
	}
	if !pc.loaded {
		pc.load(ctx)
	}
	if pc.err != nil {
		return nil, pc.err
	}
	return pc.keyring.Lookup(image)
}

// load reads the pod's pull secrets: one that cannot be read is logged and
// skipped, and remembered for the FailedToRetrieveImagePullSecret event;
// an entry without a name is ignored, as the kubelet ignores it.
func (pc *podCredentials) load(ctx context.Context) {
	pc.loaded = true
	pod := pc.pod
	var secrets []v1.Secret
	for _, ref := range pod.Spec.ImagePullSecrets {
		if ref.Name == "" {
			continue
		}
		s, err := pc.get(ctx, pod.Namespace, ref.Name)
		if err != nil {
			pc.m.log().Info("Unable to retrieve pull secret, the image pull may not succeed.", "pod", fmtPod(pod),
				"secret", pod.Namespace+"/"+ref.Name, "err", err)
			pc.missing = append(pc.missing, ref.Name)
			continue
		}
		secrets = append(secrets, *s)
	}
	pc.keyring, pc.err = credentials.NewKeyring(secrets)
}

func (pc *podCredentials) get(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	getter := pc.m.cfg.PullSecrets
	if getter == nil {
		return nil, errNoSecretGetter
	}
	s, err := getter.GetSecret(ctx, namespace, name)
	if err == nil && s == nil {
		err = fmt.Errorf("secret %s/%s: the getter returned none", namespace, name)
	}
	return s, err
}

// reportMissing is the kubelet's FailedToRetrieveImagePullSecret event
// after a sync: some pull secrets could not be read and a pull was tried
// and failed (ErrImagePull; a back-off tries nothing).
func (pc *podCredentials) reportMissing(res *SyncResult) {
	if len(pc.missing) == 0 {
		return
	}
	for _, s := range res.Steps {
		if errors.Is(s.Err, ErrImagePull) {
			pc.m.event(pc.pod, nil, v1.EventTypeWarning, EventFailedToRetrievePullSecret,
				"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.",
				strings.Join(pc.missing, ", "))
			return
		}
	}
}

// pull is the kubelet's PullImage: without credentials when none match,
// else with each in turn until one works; when none does, the error is
// all of theirs (the kubelet's aggregate: one error as it is, several as
// "[e1, e2]"). It never falls back to an anonymous pull.
func (m *Manager) pull(ctx context.Context, spec *runtimeapi.ImageSpec, auths []credentials.AuthConfig,
	sandboxCfg *runtimeapi.PodSandboxConfig) (string, error) {
	if len(auths) == 0 {
		return m.cfg.Images.PullImage(ctx, spec, nil, sandboxCfg)
	}
	var errs []error
	for _, a := range auths {
		ref, err := m.cfg.Images.PullImage(ctx, spec, &runtimeapi.AuthConfig{Username: a.Username, Password: a.Password}, sandboxCfg)
		if err == nil {
			return ref, nil
		}
		errs = append(errs, err)
	}
	return "", utilerrors.NewAggregate(errs)
}
