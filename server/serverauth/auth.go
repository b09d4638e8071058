package serverauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
	apiserverconfig "k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	authenticationv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
	certutil "k8s.io/client-go/util/cert"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
)

// The defaults of KubeletConfiguration v1beta1.
const (
	DefaultAuthenticationCacheTTL = 2 * time.Minute
	DefaultAuthorizedCacheTTL     = 5 * time.Minute
	DefaultUnauthorizedCacheTTL   = 30 * time.Second
	webhookTimeout                = 10 * time.Second
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
	// webhooks (a clientset's AuthenticationV1() and AuthorizationV1());
	// a webhook without its client is an error.
	TokenReviews         authenticationv1.AuthenticationV1Interface
	SubjectAccessReviews authorizationv1.AuthorizationV1Interface
	Log                  logr.Logger
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
	authenticator authenticator.Request
	authorizer    authorizer.Authorizer
	clientCA      *dynamiccertificates.DynamicFileCAContent // nil without --client-ca-file
	log           logr.Logger
}

// New builds the authenticator (x509 client certificates from the client
// CA, bearer tokens through TokenReview, anonymous) and the authorizer
// (SubjectAccessReview, or AlwaysAllow) with the ecosystem's delegating
// implementations, which cache the answers.
func New(cfg Config) (*Auth, error) {
	if cfg.NodeName == "" {
		return nil, errors.New("serverauth: NodeName is required")
	}
	authn, authz := WithDefaults(cfg.Authentication, cfg.Authorization)
	a := &Auth{nodeName: cfg.NodeName, log: cfg.Log}
	backoff := &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5} // the apiserver's webhook default
	ac := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous: &apiserverconfig.AnonymousAuthConfig{Enabled: *authn.Anonymous.Enabled},
		CacheTTL:  authn.Webhook.CacheTTL.Duration, TokenAccessReviewTimeout: webhookTimeout, WebhookRetryBackoff: backoff,
	}
	if f := authn.X509.ClientCAFile; f != "" {
		// Checked first: the loader leaks its queue's goroutine on a bad file.
		if _, err := certutil.CertsFromFile(f); err != nil {
			return nil, fmt.Errorf("serverauth: authentication.x509.clientCAFile: %w", err)
		}
		ca, err := dynamiccertificates.NewDynamicCAContentFromFile("client-ca-bundle", f)
		if err != nil {
			return nil, fmt.Errorf("serverauth: authentication.x509.clientCAFile: %w", err)
		}
		a.clientCA, ac.ClientCertificateCAContentProvider = ca, ca
	}
	if *authn.Webhook.Enabled {
		if cfg.TokenReviews == nil {
			return nil, errors.New("serverauth: authentication.webhook.enabled needs an API server (no TokenReviews client)")
		}
		ac.TokenAccessReviewClient = cfg.TokenReviews
	}
	var err error
	if a.authenticator, _, err = ac.New(); err != nil {
		return nil, fmt.Errorf("serverauth: authentication: %w", err)
	}
	switch authz.Mode {
	case kubeletconfig.KubeletAuthorizationModeAlwaysAllow:
		a.authorizer = authorizerfactory.NewAlwaysAllowAuthorizer()
	case kubeletconfig.KubeletAuthorizationModeWebhook:
		if cfg.SubjectAccessReviews == nil {
			return nil, errors.New("serverauth: authorization.mode Webhook needs an API server (no SubjectAccessReviews client)")
		}
		if a.authorizer, err = (authorizerfactory.DelegatingAuthorizerConfig{SubjectAccessReviewClient: cfg.SubjectAccessReviews,
			AllowCacheTTL: authz.Webhook.CacheAuthorizedTTL.Duration, DenyCacheTTL: authz.Webhook.CacheUnauthorizedTTL.Duration,
			WebhookRetryBackoff: backoff}).New(); err != nil {
			return nil, fmt.Errorf("serverauth: authorization: %w", err)
		}
	default:
		return nil, fmt.Errorf("serverauth: authorization.mode: Unsupported value: %q: supported values: %q, %q", authz.Mode,
			kubeletconfig.KubeletAuthorizationModeAlwaysAllow, kubeletconfig.KubeletAuthorizationModeWebhook)
	}
	return a, nil
}

// Run reloads the client CA file when it changes, until ctx ends; with a
// client CA, call it (its watcher's goroutines end with it).
func (a *Auth) Run(ctx context.Context) error {
	if a.clientCA != nil {
		a.clientCA.Run(ctx, 1)
	}
	<-ctx.Done()
	return nil
}

// Filter lets through to next only requests that authenticate and are
// authorized: 401 "Unauthorized" otherwise, 403 naming the user, verb and
// subresources, 500 when the authorizer cannot answer (as the kubelet).
func (a *Auth) Filter(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, ok, err := a.authenticator.AuthenticateRequest(r)
		if err != nil || !ok {
			if err != nil {
				a.log.V(2).Info("authentication failed", "path", r.URL.Path, "error", err.Error())
			}
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		attrs := Attributes(a.nodeName, resp.User, r)
		subresources := make([]string, 0, len(attrs))
		for _, attr := range attrs {
			subresources = append(subresources, attr.GetSubresource())
			decision, _, err := a.authorizer.Authorize(r.Context(), attr)
			if err != nil {
				a.log.Error(err, "authorization error", "user", resp.User.GetName(), "verb", attr.GetVerb(), "subresource", attr.GetSubresource())
				http.Error(w, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=%s, subresource=%s)",
					resp.User.GetName(), attr.GetVerb(), attr.GetResource(), attr.GetSubresource()), http.StatusInternalServerError)
				return
			}
			if decision == authorizer.DecisionAllow {
				next.ServeHTTP(w, r)
				return
			}
		}
		http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=%s, subresource(s)=[%s])", resp.User.GetName(),
			attrs[0].GetVerb(), attrs[0].GetResource(), strings.Join(subresources, " ")), http.StatusForbidden)
	})
}

// ClientCA is the client CA provider for the TLS config's client
// certificate verification (nil without one).
func (a *Auth) ClientCA() dynamiccertificates.CAContentProvider {
	if a.clientCA == nil {
		return nil
	}
	return a.clientCA
}
