package serverauth

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit-dev/nodekit/kubeapi"
)

// authenticateFunc says who sent r: not ok without its kind of
// credentials, an error for credentials that are not good.
type authenticateFunc func(r *http.Request) (u User, ok bool, err error)

// authenticator is the API server's delegating authenticator as the
// kubelet builds it: the first of its methods that knows the caller wins
// and adds system:authenticated; if none does, an error of any is a
// refusal, else the caller is anonymous if that is on.
type authenticator struct {
	methods   []authenticateFunc
	anonymous bool
}

func (a *authenticator) authenticate(r *http.Request) (User, bool, error) {
	var errs []error
	for _, m := range a.methods {
		u, ok, err := m(r)
		switch {
		case err != nil:
			errs = append(errs, err)
		case ok:
			return withAuthenticatedGroup(u), true, nil
		}
	}
	if len(errs) > 0 {
		return User{}, false, errors.Join(errs...)
	}
	if a.anonymous {
		return User{Name: UserAnonymous, Groups: []string{GroupUnauthenticated}}, true, nil
	}
	return User{}, false, nil
}

func withAuthenticatedGroup(u User) User {
	for _, g := range u.Groups {
		if g == GroupAuthenticated || g == GroupUnauthenticated {
			return u
		}
	}
	u.Groups = append(u.Groups[:len(u.Groups):len(u.Groups)], GroupAuthenticated)
	return u
}

// x509User verifies r's client certificate against the client CA; its CN
// is the user, its O the groups (the API server's CommonNameUserConversion).
func x509User(roots func() *x509.CertPool) authenticateFunc {
	return func(r *http.Request) (User, bool, error) {
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			return User{}, false, nil
		}
		certs := r.TLS.PeerCertificates
		opts := x509.VerifyOptions{Roots: roots(), Intermediates: x509.NewCertPool(),
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
		for _, c := range certs[1:] {
			opts.Intermediates.AddCert(c)
		}
		if _, err := certs[0].Verify(opts); err != nil {
			return User{}, false, fmt.Errorf("verifying certificate %q: %w", certs[0].Subject.CommonName, err)
		}
		if certs[0].Subject.CommonName == "" {
			return User{}, false, nil
		}
		return User{Name: certs[0].Subject.CommonName, Groups: certs[0].Subject.Organization}, true, nil
	}
}

// wsProtocolPrefix carries a bearer token in a WebSocket subprotocol,
// base64url-encoded, for clients that cannot set headers.
const wsProtocolPrefix = "base64url.bearer.authorization.k8s.io."

// bearerUser authenticates "Authorization: Bearer <token>", removing the
// header once it is accepted, as the API server's bearertoken does.
func bearerUser(tokens *tokenReviewer) authenticateFunc {
	return func(r *http.Request) (User, bool, error) {
		kind, token, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
		token = strings.TrimSpace(token)
		if !strings.EqualFold(kind, "bearer") || token == "" {
			return User{}, false, nil
		}
		u, ok, err := tokens.review(r.Context(), token)
		if err == nil && !ok {
			err = errors.New("invalid bearer token")
		}
		if ok {
			r.Header.Del("Authorization")
		}
		return u, ok, err
	}
}

// wsProtocolUser authenticates a WebSocket upgrade's token subprotocol,
// removing it once accepted.
func wsProtocolUser(tokens *tokenReviewer) authenticateFunc {
	return func(r *http.Request) (User, bool, error) {
		if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			return User{}, false, nil
		}
		var token string
		var kept []string
		for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
			for _, p := range strings.Split(v, ",") {
				if p = strings.TrimSpace(p); strings.HasPrefix(p, wsProtocolPrefix) {
					token = strings.TrimPrefix(p, wsProtocolPrefix)
				} else if p != "" {
					kept = append(kept, p)
				}
			}
		}
		if token == "" {
			return User{}, false, nil
		}
		raw, err := base64.RawURLEncoding.DecodeString(token)
		if err != nil || len(raw) == 0 {
			return User{}, false, errors.New("invalid bearer token")
		}
		u, ok, err := tokens.review(r.Context(), string(raw))
		if err == nil && !ok {
			err = errors.New("invalid bearer token")
		}
		if ok {
			r.Header.Del("Sec-WebSocket-Protocol")
			if len(kept) > 0 {
				r.Header.Set("Sec-WebSocket-Protocol", strings.Join(kept, ","))
			}
		}
		return u, ok, err
	}
}

// tokenReviewer asks the API server's TokenReview who a token is, caching
// each answer (keyed by the token's hash) for ttl.
type tokenReviewer struct {
	client kubeapi.Creator[*authnv1.TokenReview]
	cache  *expiring[tokenAnswer]
	ttl    time.Duration
	now    func() time.Time
}

type tokenAnswer struct {
	user User
	ok   bool
}

func (t *tokenReviewer) review(ctx context.Context, token string) (User, bool, error) {
	sum := sha256.Sum256([]byte(token))
	key := string(sum[:])
	if a, found := t.cache.get(key, t.now()); found {
		return a.user, a.ok, nil
	}
	ctx, cancel := context.WithTimeout(ctx, webhookTimeout)
	defer cancel()
	var res *authnv1.TokenReview
	err := withRetries(ctx, func() (err error) {
		res, err = t.client.Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return User{}, false, fmt.Errorf("TokenReview: %w", err)
	}
	a := tokenAnswer{ok: res.Status.Authenticated}
	if a.ok {
		ui := res.Status.User
		a.user = User{Name: ui.Username, UID: ui.UID, Groups: ui.Groups}
		if len(ui.Extra) > 0 {
			a.user.Extra = make(map[string][]string, len(ui.Extra))
			for k, v := range ui.Extra {
				a.user.Extra[k] = v
			}
		}
	}
	t.cache.put(key, a, t.now(), t.ttl)
	return a.user, a.ok, nil
}
