// Package credentials turns a pod's image pull secrets into the registry
// credentials for an image, as the kubelet's pkg/credentialprovider
// (keyring.go, config.go) and pkg/credentialprovider/secrets do.
//
// NewKeyring reads the Secrets of type kubernetes.io/dockerconfigjson
// (key .dockerconfigjson, {"auths": {...}}) and kubernetes.io/dockercfg
// (key .dockercfg, the entries alone); other Secrets, and those without
// their key, are skipped. An entry's username and password come from its
// "auth" (base64 of user:password) when it has one, else from its
// username and password fields. An entry's key is a registry host with an
// optional port and path, and may have globs in its host's labels
// ("*.registry.io"); a scheme and a leading /v1/ or /v2/ are dropped.
//
// Keyring.Lookup gives the credentials to try for an image, in the
// kubelet's order: the image is normalised as the kubelet does
// (docker.io/library/ for a bare name); every key that matches it — the
// same port, as many host labels each matching its glob
// (path/filepath.Match), the key's path a prefix of the image's path — in
// reverse lexical order of the keys (so a longer path comes before its
// prefix), each key's credentials in the order of the secrets. When no key
// matches, an image of the default registry gets the entry for
// index.docker.io. The caller tries them in turn until a pull works, and
// pulls without credentials only when there are none (kuberuntime does).
//
// # Deviations from the kubelet
//
// Within one secret, entries whose keys normalise to the same key (e.g.
// "https://r.io" and "r.io") keep the order of their raw keys; the
// kubelet's follows map iteration, i.e. is random. A secret that fails to
// parse is named in the error (the kubelet returns the JSON error alone).
// Node-level credentials (the kubelet's config.json search and credential
// provider plugins) are not here: only pull secrets.
//
//	keyring, err := credentials.NewKeyring(secrets)
//	auths, err := keyring.Lookup("registry.example.com:5000/team/app:1")
//	for _, a := range auths { ... a.Username, a.Password ... }
package credentials
