package credentials

import (
	// The image reference parser validates digests with these hashes.
	_ "crypto/sha256"
	_ "crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"sort"
	"strings"

	"github.com/distribution/reference"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// AuthConfig is one credential for a registry: what the kubelet passes to
// the runtime's PullImage from a pull secret.
type AuthConfig struct {
	Username string
	Password string
	// Email is kept as the entry has it; CRI has no field for it.
	Email string
	// Secret is the pull secret it comes from.
	Secret types.NamespacedName
}

// SecretError is a pull secret whose docker config could not be read.
type SecretError struct {
	// Secret is the secret's namespace and name.
	Secret types.NamespacedName
	// Key is its data key: .dockerconfigjson or .dockercfg.
	Key string
	Err error
}

func (e *SecretError) Error() string {
	return fmt.Sprintf("pull secret %s: %s: %v", e.Secret, e.Key, e.Err)
}

func (e *SecretError) Unwrap() error { return e.Err }

// ImageError is an image reference that does not parse.
type ImageError struct {
	Image string
	Err   error
}

func (e *ImageError) Error() string {
	return fmt.Sprintf("couldn't parse image name %q: %v", e.Image, e.Err)
}

func (e *ImageError) Unwrap() error { return e.Err }

// The default registry: a bare image name's, and the key its credentials
// are filed under (https://index.docker.io/v1/ in a docker config).
const defaultRegistryHost = "index.docker.io"

// Keyring holds the credentials of some pull secrets by normalised key
// (host[:port][/path]); the zero Keyring is empty. It is read-only once
// built, so safe to share.
type Keyring struct {
	// index is the keys, deduplicated, in reverse lexical order.
	index []string
	creds map[string][]AuthConfig
}

// NewKeyring reads the docker configs of secrets, in order. A secret of one
// of the two docker types whose config does not parse (JSON, or an "auth"
// that is not base64 of user:password) fails the whole keyring, as the
// kubelet's MakeDockerKeyring does; an entry whose key is not a URL is
// skipped.
func NewKeyring(secrets []v1.Secret) (*Keyring, error) {
	k := &Keyring{}
	for i := range secrets {
		s := &secrets[i]
		ref := types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
		var entries map[string]entry
		switch data := s.Data; {
		case s.Type == v1.SecretTypeDockerConfigJson && len(data[v1.DockerConfigJsonKey]) > 0:
			var cfg struct {
				Auths map[string]entry `json:"auths"`
			}
			if err := json.Unmarshal(data[v1.DockerConfigJsonKey], &cfg); err != nil {
				return nil, &SecretError{Secret: ref, Key: v1.DockerConfigJsonKey, Err: err}
			}
			entries = cfg.Auths
		case s.Type == v1.SecretTypeDockercfg && len(data[v1.DockerConfigKey]) > 0:
			if err := json.Unmarshal(data[v1.DockerConfigKey], &entries); err != nil {
				return nil, &SecretError{Secret: ref, Key: v1.DockerConfigKey, Err: err}
			}
		default:
			continue
		}
		k.add(ref, entries)
	}
	return k, nil
}

// Len is the number of registry keys the keyring holds.
func (k *Keyring) Len() int { return len(k.index) }

// add files a secret's entries under their normalised keys (the kubelet's
// BasicDockerKeyring.Add).
func (k *Keyring) add(secret types.NamespacedName, entries map[string]entry) {
	if k.creds == nil {
		k.creds = map[string][]AuthConfig{}
	}
	raw := make([]string, 0, len(entries))
	for r := range entries {
		raw = append(raw, r)
	}
	sort.Strings(raw)
	for _, r := range raw {
		key, ok := normaliseKey(r)
		if !ok {
			continue
		}
		e := entries[r]
		if _, seen := k.creds[key]; !seen {
			k.index = append(k.index, key)
		}
		k.creds[key] = append(k.creds[key], AuthConfig{Username: e.Username, Password: e.Password, Email: e.Email, Secret: secret})
	}
	sort.Sort(sort.Reverse(sort.StringSlice(k.index)))
}

// normaliseKey is a docker config key as the kubelet files it: host[:port]
// and the path, without a leading /v1 or /v2, when there is more than "/".
func normaliseKey(raw string) (string, bool) {
	s := raw
	if !strings.HasPrefix(s, "https://") && !strings.HasPrefix(s, "http://") {
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", false
	}
	path := u.Path
	if strings.HasPrefix(path, "/v2/") || strings.HasPrefix(path, "/v1/") {
		path = path[3:]
	}
	if path != "" && path != "/" {
		return u.Host + path, true
	}
	return u.Host, true
}

// Lookup returns the credentials to try, in order, for image (a reference
// as in a container's image field); none when no key matches. The image
// is parsed only when the keyring holds something.
func (k *Keyring) Lookup(image string) ([]AuthConfig, error) {
	if len(k.index) == 0 {
		return nil, nil
	}
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return nil, &ImageError{Image: image, Err: err}
	}
	repo := named.Name()
	var out []AuthConfig
	for _, key := range k.index {
		if Match(key, repo) {
			out = append(out, k.creds[key]...)
		}
	}
	if len(out) == 0 && isDefaultRegistry(repo) {
		out = append(out, k.creds[defaultRegistryHost]...)
	}
	return out, nil
}

// Match reports whether a docker config key (host[:port][/path], globs
// allowed in the host's labels) covers a repository (host[:port]/path), by
// the kubelet's URLsMatch: the same port, as many labels each matching its
// glob, and the key's path a prefix of the repository's. A key or a
// repository that does not parse, or a malformed glob, matches nothing.
func Match(key, repo string) bool {
	ku, err := url.Parse("https://" + key)
	if err != nil {
		return false
	}
	ru, err := url.Parse("https://" + repo)
	if err != nil {
		return false
	}
	kLabels, kPort := splitHost(ku.Host)
	rLabels, rPort := splitHost(ru.Host)
	if kPort != rPort || len(kLabels) != len(rLabels) || !strings.HasPrefix(ru.Path, ku.Path) {
		return false
	}
	for i, glob := range kLabels {
		if ok, err := filepath.Match(glob, rLabels[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

// splitHost is a host's dot-separated labels and its port ("" for none).
func splitHost(hostport string) ([]string, string) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	return strings.Split(host, "."), port
}

// isDefaultRegistry says whether a repository is on Docker Hub: a single
// component, docker.io or index.docker.io, or a first component that is
// no host (no '.' nor ':').
func isDefaultRegistry(repo string) bool {
	first, _, found := strings.Cut(repo, "/")
	if first == "" {
		return false
	}
	if !found || first == "docker.io" || first == defaultRegistryHost {
		return true
	}
	return !strings.ContainsAny(first, ".:")
}

// entry is one docker config entry; "auth", when set, gives the username
// and password.
type entry struct {
	Username string
	Password string
	Email    string
}

func (e *entry) UnmarshalJSON(data []byte) error {
	var raw struct {
		Username string `json:"username,omitempty"`
		Password string `json:"password,omitempty"`
		Email    string `json:"email,omitempty"`
		Auth     string `json:"auth,omitempty"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	e.Username, e.Password, e.Email = raw.Username, raw.Password, raw.Email
	if raw.Auth == "" {
		return nil
	}
	var err error
	e.Username, e.Password, err = decodeAuth(raw.Auth)
	return err
}

// decodeAuth reads an "auth" field: base64 (padded when it ends with '=',
// else unpadded) of user:password.
func decodeAuth(field string) (string, string, error) {
	enc := base64.RawStdEncoding
	if strings.HasSuffix(strings.TrimSpace(field), "=") {
		enc = base64.StdEncoding
	}
	b, err := enc.DecodeString(field)
	if err != nil {
		return "", "", fmt.Errorf("auth: %w", err)
	}
	user, pass, ok := strings.Cut(string(b), ":")
	if !ok {
		return "", "", errors.New("unable to parse auth field, must be formatted as base64(username:password)")
	}
	return user, pass, nil
}
