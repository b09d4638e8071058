package serving

import (
	"fmt"
	"net"
	"strings"

	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/server/serverauth"
)

// ApplyConfig takes kc's serving settings (a --config file's) for the
// flags not given on the command line: flags win, as in the kubelet.
func (f *Flags) ApplyConfig(kc *kubeletconfig.KubeletConfiguration) {
	s, set := f.s, f.given()
	take(set, "address", &s.Address, kc.Address)
	take(set, "port", &s.Port, int(kc.Port))
	take(set, "read-only-port", &s.ReadOnlyPort, int(kc.ReadOnlyPort))
	take(set, "healthz-bind-address", &s.HealthzAddress, kc.HealthzBindAddress)
	if kc.HealthzPort != nil && !set["healthz-port"] { // 0 (disabled) is a value here
		s.HealthzPort = int(*kc.HealthzPort)
	}
	take(set, "tls-cert-file", &s.TLS.CertFile, kc.TLSCertFile)
	take(set, "tls-private-key-file", &s.TLS.KeyFile, kc.TLSPrivateKeyFile)
	take(set, "tls-min-version", &s.TLS.MinVersion, kc.TLSMinVersion)
	take(set, "tls-cipher-suites", &f.cipherSuites, strings.Join(kc.TLSCipherSuites, ","))
	take(set, "client-ca-file", &s.Authentication.X509.ClientCAFile, kc.Authentication.X509.ClientCAFile)
	take(set, "authentication-token-webhook-cache-ttl", &s.Authentication.Webhook.CacheTTL.Duration, kc.Authentication.Webhook.CacheTTL.Duration)
	take(set, "authorization-mode", &f.mode, string(kc.Authorization.Mode))
	take(set, "authorization-webhook-cache-authorized-ttl", &s.Authorization.Webhook.CacheAuthorizedTTL.Duration, kc.Authorization.Webhook.CacheAuthorizedTTL.Duration)
	take(set, "authorization-webhook-cache-unauthorized-ttl", &s.Authorization.Webhook.CacheUnauthorizedTTL.Duration, kc.Authorization.Webhook.CacheUnauthorizedTTL.Duration)
	if v := kc.Authentication.Anonymous.Enabled; v != nil && !set["anonymous-auth"] {
		f.anonymous = *v
	}
	if v := kc.Authentication.Webhook.Enabled; v != nil && !set["authentication-token-webhook"] {
		f.webhook = *v
	}
	f.fileGiven = GivenInConfig(kc)
}

// GivenInConfig names kc's settings that Standalone keeps, as an error
// names them ("authorization.mode in --config").
func GivenInConfig(kc *kubeletconfig.KubeletConfiguration) Given {
	name := func(set bool, field string) string {
		if set {
			return field + " in --config"
		}
		return ""
	}
	return Given{Address: name(kc.Address != "", "address"),
		Anonymous:         name(kc.Authentication.Anonymous.Enabled != nil, "authentication.anonymous.enabled"),
		Webhook:           name(kc.Authentication.Webhook.Enabled != nil, "authentication.webhook.enabled"),
		AuthorizationMode: name(kc.Authorization.Mode != "", "authorization.mode")}
}

// Finish folds the flags into their Settings and checks them; errors name
// the flag and the value. CertDir defaults to <rootDir>/pki. Without an
// API server (apiServer false) and with Port served, the settings pass
// through Standalone (Settings.Standalone says what changed).
func (f *Flags) Finish(rootDir string, apiServer bool) error {
	s := f.s
	s.Authentication.Anonymous.Enabled, s.Authentication.Webhook.Enabled = ptr.To(f.anonymous), ptr.To(f.webhook)
	s.Authorization.Mode = kubeletconfig.KubeletAuthorizationMode(f.mode)
	if f.cipherSuites != "" {
		s.TLS.CipherSuites = strings.Split(f.cipherSuites, ",")
	}
	if s.TLS.CertDir == "" {
		s.TLS.CertDir = rootDir + "/pki"
	}
	if err := s.validate(); err != nil {
		return err
	}
	if apiServer || s.Port == 0 {
		return nil
	}
	return f.standalone()
}

func (s *Settings) validate() error {
	if m := s.Authorization.Mode; m != kubeletconfig.KubeletAuthorizationModeWebhook && m != kubeletconfig.KubeletAuthorizationModeAlwaysAllow {
		return fmt.Errorf("--authorization-mode: Unsupported value: %q: supported values: \"AlwaysAllow\", \"Webhook\"", m)
	}
	for name, a := range map[string]string{"--address": s.Address, "--healthz-bind-address": s.HealthzAddress} {
		if net.ParseIP(a) == nil {
			return fmt.Errorf("%s: Invalid value: %q: must be an IP address", name, a)
		}
	}
	for name, p := range map[string]int{"--port": s.Port, "--read-only-port": s.ReadOnlyPort, "--healthz-port": s.HealthzPort} {
		if p < 0 || p > 65535 {
			return fmt.Errorf("%s: invalid value %d: must be between 0 and 65535", name, p)
		}
	}
	return nil
}

// standalone readies Port for a node without an API server: there is none
// to ask, so defaulted webhook settings give way to the kubelet's
// standalone defaults on loopback, and given ones are refused.
func (f *Flags) standalone() error {
	s, set := f.s, f.given()
	given := f.fileGiven // a flag wins over the file, in the error's name too
	for name, dst := range map[string]*string{"address": &given.Address, "anonymous-auth": &given.Anonymous,
		"authentication-token-webhook": &given.Webhook, "authorization-mode": &given.AuthorizationMode} {
		if set[name] {
			*dst = "--" + name
		}
	}
	p, changed, err := Standalone(PortAuth{Address: s.Address, Authentication: s.Authentication, Authorization: s.Authorization}, given)
	if err != nil {
		return fmt.Errorf("%w; without --kubeconfig, leave it out (the kubelet's standalone defaults, on %s) or use --port 0",
			err, Loopback)
	}
	s.Address, s.Authentication, s.Authorization, s.Standalone = p.Address, p.Authentication, p.Authorization, changed
	return nil
}

// Config is s as Listen takes it, for the node named node at ip (the
// self-signed certificate's names and the authorizer's node). The caller
// adds the handlers, the log and, with an API server, the webhooks'
// clients (Auth.TokenReviews, Auth.SubjectAccessReviews).
func (s Settings) Config(node string, ip net.IP) Config {
	tls := s.TLS
	tls.Hostname, tls.IPs = node, []net.IP{ip}
	return Config{Address: s.Address, Port: s.Port, ReadOnlyPort: s.ReadOnlyPort, HealthzAddress: s.HealthzAddress,
		HealthzPort: s.HealthzPort, TLS: tls, Auth: serverauth.Config{NodeName: node, Authentication: s.Authentication,
			Authorization: s.Authorization}}
}
