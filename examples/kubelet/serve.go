package main

import (
	"flag"
	"fmt"
	"net"
	"strings"

	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/server/serverauth"
	nodeserving "github.com/nodekit-dev/nodekit/server/serving"
)

// serving is the kubelet's API serving configuration: --port with TLS,
// authentication and authorization; the read-only port; healthz.
type serving struct {
	address, healthzAddress     string
	port, readOnlyPort, healthz int
	tls                         serverauth.TLSOptions
	authn                       kubeletconfig.KubeletAuthentication
	authz                       kubeletconfig.KubeletAuthorization
	// standalone are the settings changed for want of an API server
	// (nodeserving.Standalone), logged at start.
	standalone []string
}

// servingFlags are the flags' values before the config file and the
// v1beta1 defaults are folded in (pointers in the config types).
type servingFlags struct {
	anonymous, webhook bool
	mode, cipherSuites string
	fileGiven          nodeserving.Given // the config file's auth settings
}

// addServingFlags registers the kubelet's serving flags with its
// KubeletConfiguration v1beta1 defaults (not its legacy command-line
// ones: anonymous off, webhook authentication and authorization on,
// read-only port off). Without --kubeconfig, standaloneAuth replaces those
// the user did not give.
func addServingFlags(fs *flag.FlagSet, s *serving, f *servingFlags) {
	fs.StringVar(&s.address, "address", "0.0.0.0", "IP address the API (--port, --read-only-port) listens on")
	fs.IntVar(&s.port, "port", 10250, "port of the authenticated HTTPS API (0 disables)")
	fs.IntVar(&s.readOnlyPort, "read-only-port", 0, "port of the unauthenticated read-only HTTP API: /pods, /stats, /metrics, /healthz (0 disables)")
	fs.StringVar(&s.healthzAddress, "healthz-bind-address", "127.0.0.1", "IP address of the healthz server")
	fs.IntVar(&s.healthz, "healthz-port", 10248, "port of the plain-HTTP /healthz server (0 disables)")
	fs.StringVar(&s.tls.CertFile, "tls-cert-file", "", "serving certificate (default: a self-signed kubelet.crt in --cert-dir)")
	fs.StringVar(&s.tls.KeyFile, "tls-private-key-file", "", "serving certificate's private key")
	fs.StringVar(&s.tls.CertDir, "cert-dir", "", "directory of the self-signed serving certificate (default <root-dir>/pki)")
	fs.StringVar(&s.tls.MinVersion, "tls-min-version", "", "minimum TLS version: VersionTLS12 or VersionTLS13")
	fs.StringVar(&f.cipherSuites, "tls-cipher-suites", "", "comma-separated cipher suites (Go's names; default Go's)")
	fs.StringVar(&s.authn.X509.ClientCAFile, "client-ca-file", "", "CA bundle that verifies client certificates (their CN is the user, O the groups)")
	fs.BoolVar(&f.anonymous, "anonymous-auth", false, "serve unauthenticated requests as system:anonymous")
	fs.BoolVar(&f.webhook, "authentication-token-webhook", true, "authenticate bearer tokens with the API server's TokenReview")
	fs.DurationVar(&s.authn.Webhook.CacheTTL.Duration, "authentication-token-webhook-cache-ttl", serverauth.DefaultAuthenticationCacheTTL, "how long token answers are cached")
	fs.StringVar(&f.mode, "authorization-mode", string(kubeletconfig.KubeletAuthorizationModeWebhook), "Webhook (SubjectAccessReview) or AlwaysAllow")
	fs.DurationVar(&s.authz.Webhook.CacheAuthorizedTTL.Duration, "authorization-webhook-cache-authorized-ttl", serverauth.DefaultAuthorizedCacheTTL, "how long allowed answers are cached")
	fs.DurationVar(&s.authz.Webhook.CacheUnauthorizedTTL.Duration, "authorization-webhook-cache-unauthorized-ttl", serverauth.DefaultUnauthorizedCacheTTL, "how long denied answers are cached")
}

// applyServingConfig takes the config file's serving settings for the
// flags not given; f's values win for the flags given.
func applyServingConfig(set map[string]bool, s *serving, f *servingFlags, kc *kubeletconfig.KubeletConfiguration) {
	take(set, "address", &s.address, kc.Address)
	take(set, "port", &s.port, int(kc.Port))
	take(set, "read-only-port", &s.readOnlyPort, int(kc.ReadOnlyPort))
	take(set, "healthz-bind-address", &s.healthzAddress, kc.HealthzBindAddress)
	take(set, "tls-cert-file", &s.tls.CertFile, kc.TLSCertFile)
	take(set, "tls-private-key-file", &s.tls.KeyFile, kc.TLSPrivateKeyFile)
	take(set, "tls-min-version", &s.tls.MinVersion, kc.TLSMinVersion)
	take(set, "tls-cipher-suites", &f.cipherSuites, strings.Join(kc.TLSCipherSuites, ","))
	take(set, "client-ca-file", &s.authn.X509.ClientCAFile, kc.Authentication.X509.ClientCAFile)
	take(set, "authentication-token-webhook-cache-ttl", &s.authn.Webhook.CacheTTL.Duration, kc.Authentication.Webhook.CacheTTL.Duration)
	take(set, "authorization-mode", &f.mode, string(kc.Authorization.Mode))
	take(set, "authorization-webhook-cache-authorized-ttl", &s.authz.Webhook.CacheAuthorizedTTL.Duration, kc.Authorization.Webhook.CacheAuthorizedTTL.Duration)
	take(set, "authorization-webhook-cache-unauthorized-ttl", &s.authz.Webhook.CacheUnauthorizedTTL.Duration, kc.Authorization.Webhook.CacheUnauthorizedTTL.Duration)
	if v := kc.Authentication.Anonymous.Enabled; v != nil && !set["anonymous-auth"] {
		f.anonymous = *v
	}
	if v := kc.Authentication.Webhook.Enabled; v != nil && !set["authentication-token-webhook"] {
		f.webhook = *v
	}
	f.fileGiven = fileGiven(kc)
}

// fileGiven names the config file's settings that standaloneAuth keeps.
func fileGiven(kc *kubeletconfig.KubeletConfiguration) nodeserving.Given {
	name := func(set bool, field string) string {
		if set {
			return field + " in --config"
		}
		return ""
	}
	return nodeserving.Given{Address: name(kc.Address != "", "address"),
		Anonymous:         name(kc.Authentication.Anonymous.Enabled != nil, "authentication.anonymous.enabled"),
		Webhook:           name(kc.Authentication.Webhook.Enabled != nil, "authentication.webhook.enabled"),
		AuthorizationMode: name(kc.Authorization.Mode != "", "authorization.mode")}
}

// standaloneAuth readies --port for a node without --kubeconfig: there is
// no API server to ask, so defaulted webhook settings give way to the
// kubelet's standalone defaults on loopback, and given ones are refused.
func (s *serving) standaloneAuth(fs *flag.FlagSet, fileGiven nodeserving.Given) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	given := fileGiven // a flag wins over the file, in the error's name too
	for name, dst := range map[string]*string{"address": &given.Address, "anonymous-auth": &given.Anonymous,
		"authentication-token-webhook": &given.Webhook, "authorization-mode": &given.AuthorizationMode} {
		if set[name] {
			*dst = "--" + name
		}
	}
	p, changed, err := nodeserving.Standalone(nodeserving.PortAuth{Address: s.address, Authentication: s.authn, Authorization: s.authz}, given)
	if err != nil {
		return fmt.Errorf("%w; without --kubeconfig, leave it out (the kubelet's standalone defaults, on %s) or use --port 0",
			err, nodeserving.Loopback)
	}
	s.address, s.authn, s.authz, s.standalone = p.Address, p.Authentication, p.Authorization, changed
	return nil
}

// finish folds the flags into s and checks it.
func (s *serving) finish(f servingFlags, rootDir string) error {
	s.authn.Anonymous.Enabled, s.authn.Webhook.Enabled = ptr.To(f.anonymous), ptr.To(f.webhook)
	s.authz.Mode = kubeletconfig.KubeletAuthorizationMode(f.mode)
	if f.cipherSuites != "" {
		s.tls.CipherSuites = strings.Split(f.cipherSuites, ",")
	}
	if s.tls.CertDir == "" {
		s.tls.CertDir = rootDir + "/pki"
	}
	if s.authz.Mode != kubeletconfig.KubeletAuthorizationModeWebhook && s.authz.Mode != kubeletconfig.KubeletAuthorizationModeAlwaysAllow {
		return fmt.Errorf("--authorization-mode: Unsupported value: %q: supported values: \"AlwaysAllow\", \"Webhook\"", f.mode)
	}
	for name, a := range map[string]string{"--address": s.address, "--healthz-bind-address": s.healthzAddress} {
		if net.ParseIP(a) == nil {
			return fmt.Errorf("%s: Invalid value: %q: must be an IP address", name, a)
		}
	}
	for name, p := range map[string]int{"--port": s.port, "--read-only-port": s.readOnlyPort, "--healthz-port": s.healthz} {
		if p < 0 || p > 65535 {
			return fmt.Errorf("%s: invalid value %d: must be between 0 and 65535", name, p)
		}
	}
	return nil
}

// listen binds the node's servers (nodekit's server/serving): the API on
// --port with TLS and authentication/authorization, the read-only API,
// healthz. Without --kubeconfig, standaloneAuth has left no webhook.
func (a *agent) listen() (*nodeserving.Servers, error) {
	s := a.cfg.serving
	opts := s.tls
	opts.Hostname, opts.IPs = a.cfg.hostname, []net.IP{net.ParseIP(a.cfg.hostIP)}
	auth := serverauth.Config{NodeName: a.cfg.hostname, Authentication: s.authn, Authorization: s.authz, Log: a.log.WithName("auth")}
	if a.cluster != nil {
		auth.TokenReviews, auth.SubjectAccessReviews = a.cluster.Client.AuthenticationV1(), a.cluster.Client.AuthorizationV1()
	}
	return nodeserving.Listen(nodeserving.Config{Address: s.address, Port: s.port, ReadOnlyPort: s.readOnlyPort,
		HealthzAddress: s.healthzAddress, HealthzPort: s.healthz, TLS: opts, Auth: auth,
		API: a.APIHandler(), ReadOnly: a.ReadOnlyHandler(), Healthz: a.APIHandler().Healthz(), Log: a.log.WithName("serving")})
}
