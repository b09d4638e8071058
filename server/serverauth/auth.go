package serverauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/kubeapi"
)

// The defaults of KubeletConfiguration v1beta1.
const (
	DefaultAuthenticationCacheTTL = 2 * time.Minute
	DefaultAuthorizedCacheTTL     = 5 * time.Minute
	DefaultUnauthorizedCacheTTL   = 30 * time.Second
	webhookTimeout                = 10 * time.Second
	// cacheSize bounds each of the answer caches.
	cacheSize = 4096
)

// Config configures an Auth.
type Config struct {
	// NodeName is the node the requests are authorized against
	// (nodes/<subresource> named NodeName).
	NodeName string
	// Authentication and Authorization are the KubeletConfiguration's;
	// unset fields take the v1beta1 defaults: anonymous off, webhook
	// authentication on (cache 2m), authorization mode Webhook (cache 5m
	// allowed, 30s denied).
	Authentication kubeletconfig.KubeletAuthentication
	Authorization  kubeletconfig.KubeletAuthorization
	// TokenReviews and SubjectAccessReviews reach the API server for the
	// webhooks (a kubeapi.Interface's TokenReviews() and
	// SubjectAccessReviews(), or a clientset's typed clients); a webhook
	// without its client is an error.
	TokenReviews         kubeapi.Creator[*authnv1.TokenReview]
	SubjectAccessReviews kubeapi.Creator[*authzv1.SubjectAccessReview]
	// Clock times the caches and the client CA's reloads (default
	// clock.RealClock{}).
	Clock clock.WithTicker
	Log   logr.Logger
}

// WithDefaults fills the v1beta1 defaults into the unset fields.
func WithDefaults(authn kubeletconfig.KubeletAuthentication, authz kubeletconfig.KubeletAuthorization) (
	kubeletconfig.KubeletAuthentication, kubeletconfig.KubeletAuthorization) {
	if authn.Anonymous.Enabled == nil {
		authn.Anonymous.Enabled = ptr.To(false)
	}
	if authn.Webhook.Enabled == nil {
		authn.Webhook.Enabled = ptr.To(true)
	}
	if authn.Webhook.CacheTTL.Duration == 0 {
		authn.Webhook.CacheTTL.Duration = DefaultAuthenticationCacheTTL
	}
	if authz.Mode == "" {
		authz.Mode = kubeletconfig.KubeletAuthorizationModeWebhook
	}
	if authz.Webhook.CacheAuthorizedTTL.Duration == 0 {
		authz.Webhook.CacheAuthorizedTTL.Duration = DefaultAuthorizedCacheTTL
	}
	if authz.Webhook.CacheUnauthorizedTTL.Duration == 0 {
		authz.Webhook.CacheUnauthorizedTTL.Duration = DefaultUnauthorizedCacheTTL
	}
	return authn, authz
}

// Auth authenticates and authorizes requests to the node's API as the
// kubelet does.
type Auth struct {
	nodeName      string
	authenticator *authenticator
	reviews       *accessReviewer // nil: AlwaysAllow
	clientCA      *clientCA       // nil without --client-ca-file
	clock         clock.WithTicker
	log           logr.Logger
}

// New builds the authenticator (x509 client certificates from the client
// CA, bearer tokens through TokenReview, anonymous) and the authorizer
// (SubjectAccessReview, or AlwaysAllow), which cache the answers.
func New(cfg Config) (*Auth, error) {
	if cfg.NodeName == "" {
		return nil, errors.New("serverauth: NodeName is required")
	}
	authn, authz := WithDefaults(cfg.Authentication, cfg.Authorization)
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	a := &Auth{nodeName: cfg.NodeName, clock: cfg.Clock, log: cfg.Log,
		authenticator: &authenticator{anonymous: *authn.Anonymous.Enabled}}
	if f := authn.X509.ClientCAFile; f != "" {
		var err error
		if a.clientCA, err = newClientCA(f); err != nil {
			return nil, fmt.Errorf("serverauth: authentication.x509.clientCAFile: %w", err)
		}
		a.authenticator.methods = append(a.authenticator.methods, x509User(a.clientCA.roots))
	}
	if *authn.Webhook.Enabled {
		if cfg.TokenReviews == nil {
			return nil, errors.New("serverauth: authentication.webhook.enabled needs an API server (no TokenReviews client)")
		}
		tokens := &tokenReviewer{client: cfg.TokenReviews, cache: newExpiring[tokenAnswer](cacheSize),
			ttl: authn.Webhook.CacheTTL.Duration, now: cfg.Clock.Now}
		a.authenticator.methods = append(a.authenticator.methods, bearerUser(tokens), wsProtocolUser(tokens))
	}
	if len(a.authenticator.methods) == 0 && !a.authenticator.anonymous {
		return nil, errors.New("serverauth: authentication: no authentication method configured")
	}
	switch authz.Mode {
	case kubeletconfig.KubeletAuthorizationModeAlwaysAllow:
	case kubeletconfig.KubeletAuthorizationModeWebhook:
		if cfg.SubjectAccessReviews == nil {
			return nil, errors.New("serverauth: authorization.mode Webhook needs an API server (no SubjectAccessReviews client)")
		}
		a.reviews = &accessReviewer{client: cfg.SubjectAccessReviews, cache: newExpiring[bool](cacheSize),
			allowTTL: authz.Webhook.CacheAuthorizedTTL.Duration, denyTTL: authz.Webhook.CacheUnauthorizedTTL.Duration, now: cfg.Clock.Now}
	default:
		return nil, fmt.Errorf("serverauth: authorization.mode: Unsupported value: %q: supported values: %q, %q", authz.Mode,
			kubeletconfig.KubeletAuthorizationModeAlwaysAllow, kubeletconfig.KubeletAuthorizationModeWebhook)
	}
	return a, nil
}

// Run reloads the client CA file when it changes, until ctx ends.
func (a *Auth) Run(ctx context.Context) error {
	if a.clientCA != nil {
		a.clientCA.run(ctx, a.clock, a.log)
	}
	<-ctx.Done()
	return nil
}

// Filter lets through to next only requests that authenticate and are
// authorized: 401 "Unauthorized" otherwise, 403 naming the user, verb and
// subresources, 500 when the authorizer cannot answer (as the kubelet).
func (a *Auth) Filter(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok, err := a.authenticator.authenticate(r)
		if err != nil || !ok {
			if err != nil {
				a.log.V(2).Info("authentication failed", "path", r.URL.Path, "error", err.Error())
			}
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		attrs := RequestAttributes(a.nodeName, u, r)
		subresources := make([]string, 0, len(attrs))
		for _, attr := range attrs {
			subresources = append(subresources, attr.Subresource)
			allowed, err := a.allowed(r.Context(), attr)
			if err != nil {
				a.log.Error(err, "authorization error", "user", u.Name, "verb", attr.Verb, "subresource", attr.Subresource)
				http.Error(w, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=%s, subresource=%s)",
					u.Name, attr.Verb, attr.Resource, attr.Subresource), http.StatusInternalServerError)
				return
			}
			if allowed {
				next.ServeHTTP(w, r)
				return
			}
		}
		http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=%s, subresource(s)=[%s])", u.Name,
			attrs[0].Verb, attrs[0].Resource, strings.Join(subresources, " ")), http.StatusForbidden)
	})
}

func (a *Auth) allowed(ctx context.Context, attr Attributes) (bool, error) {
	if a.reviews == nil {
		return true, nil
	}
	return a.reviews.allowed(ctx, attr)
}
