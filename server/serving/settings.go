package serving

import (
	"flag"

	kubeletconfig "k8s.io/kubelet/config/v1beta1"

	"github.com/nodekit-dev/nodekit/server/serverauth"
)

// Settings are a kubelet's serving settings as its flags and its
// KubeletConfiguration give them: --port with TLS, authentication and
// authorization, the read-only port, healthz. AddFlags registers the
// kubelet's flags for them; Config turns them into Listen's.
type Settings struct {
	Address, HealthzAddress         string
	Port, ReadOnlyPort, HealthzPort int
	TLS                             serverauth.TLSOptions
	Authentication                  kubeletconfig.KubeletAuthentication
	Authorization                   kubeletconfig.KubeletAuthorization
	// Standalone are the settings changed for want of an API server
	// (Standalone), for the caller to log at start.
	Standalone []string
}

// Flags are the serving flags' values before a config file and the
// v1beta1 defaults are folded into their Settings (Finish).
type Flags struct {
	s                  *Settings
	fs                 *flag.FlagSet
	anonymous, webhook bool
	mode, cipherSuites string
	fileGiven          Given // the config file's auth settings
}

// AddFlags registers the kubelet's serving flags on fs, bound to s, with
// its KubeletConfiguration v1beta1 defaults, not its legacy command-line
// ones: anonymous off, webhook authentication and authorization on,
// read-only port off (the kubelet keeps anonymous on, AlwaysAllow and
// read-only 10255 when no --config is given: a deviation, toward the
// secure side). Without an API server there is none for webhooks: Finish
// gives the auth settings neither flags nor --config give the kubelet's
// legacy defaults, and the address, unless given, becomes Loopback (the
// kubelet serves them on 0.0.0.0); a webhook setting given is an error
// naming it, as in the kubelet (which with --config also fails on the
// file's webhook defaults).
func (s *Settings) AddFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{s: s, fs: fs}
	fs.StringVar(&s.Address, "address", "0.0.0.0", "IP address the API (--port, --read-only-port) listens on")
	fs.IntVar(&s.Port, "port", 10250, "port of the authenticated HTTPS API (0 disables)")
	fs.IntVar(&s.ReadOnlyPort, "read-only-port", 0, "port of the unauthenticated read-only HTTP API: /pods, /stats, /metrics, /healthz (0 disables)")
	fs.StringVar(&s.HealthzAddress, "healthz-bind-address", "127.0.0.1", "IP address of the healthz server")
	fs.IntVar(&s.HealthzPort, "healthz-port", 10248, "port of the plain-HTTP /healthz server (0 disables)")
	fs.StringVar(&s.TLS.CertFile, "tls-cert-file", "", "serving certificate (default: a self-signed kubelet.crt in --cert-dir)")
	fs.StringVar(&s.TLS.KeyFile, "tls-private-key-file", "", "serving certificate's private key")
	fs.StringVar(&s.TLS.CertDir, "cert-dir", "", "directory of the self-signed serving certificate (default <root-dir>/pki)")
	fs.StringVar(&s.TLS.MinVersion, "tls-min-version", "", "minimum TLS version: VersionTLS12 or VersionTLS13")
	fs.StringVar(&f.cipherSuites, "tls-cipher-suites", "", "comma-separated cipher suites (Go's names; default Go's)")
	fs.StringVar(&s.Authentication.X509.ClientCAFile, "client-ca-file", "", "CA bundle that verifies client certificates (their CN is the user, O the groups)")
	fs.BoolVar(&f.anonymous, "anonymous-auth", false, "serve unauthenticated requests as system:anonymous")
	fs.BoolVar(&f.webhook, "authentication-token-webhook", true, "authenticate bearer tokens with the API server's TokenReview")
	fs.DurationVar(&s.Authentication.Webhook.CacheTTL.Duration, "authentication-token-webhook-cache-ttl", serverauth.DefaultAuthenticationCacheTTL, "how long token answers are cached")
	fs.StringVar(&f.mode, "authorization-mode", string(kubeletconfig.KubeletAuthorizationModeWebhook), "Webhook (SubjectAccessReview) or AlwaysAllow")
	fs.DurationVar(&s.Authorization.Webhook.CacheAuthorizedTTL.Duration, "authorization-webhook-cache-authorized-ttl", serverauth.DefaultAuthorizedCacheTTL, "how long allowed answers are cached")
	fs.DurationVar(&s.Authorization.Webhook.CacheUnauthorizedTTL.Duration, "authorization-webhook-cache-unauthorized-ttl", serverauth.DefaultUnauthorizedCacheTTL, "how long denied answers are cached")
	return f
}

// given are the flags set on the command line.
func (f *Flags) given() map[string]bool {
	set := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	return set
}

// take sets *dst to v unless the flag was given or v is unset (zero).
func take[T comparable](given map[string]bool, flagName string, dst *T, v T) {
	var zero T
	if !given[flagName] && v != zero {
		*dst = v
	}
}
