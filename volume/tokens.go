package volume

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// TokenRequester asks the API server for a service account's token (a
// TokenRequest on serviceaccounts/<name>/token); *volume/apiclient.Objects
// implements it. The Node authorizer lets a node request tokens bound to
// its own pods.
type TokenRequester interface {
	CreateToken(ctx context.Context, namespace, serviceAccount string, req *authv1.TokenRequest) (*authv1.TokenRequest, error)
}

// The kubelet's token manager's rules.
const (
	DefaultTokenExpirationSeconds = 3600
	tokenMaxTTL                   = 24 * time.Hour
	tokenMaxJitter                = 10 * time.Second
)

// Tokens requests and caches pods' bound service account tokens as the
// kubelet's token manager does: a token is reused until 80% of its
// lifetime (or 24 h) has passed, less up to 10 s of jitter; if a refresh
// fails, a token that has not expired yet is kept. Tokens of a pod are
// dropped by ForgetPod and, at the latest, when they expire.
type Tokens struct {
	requester TokenRequester
	clock     clock.PassiveClock

	mu    sync.Mutex
	cache map[tokenKey]*authv1.TokenRequest
}

type tokenKey struct {
	namespace, serviceAccount, audience string
	expirationSeconds                   int64
	pod                                 types.UID
}

// NewTokens returns a token cache over r; clk defaults to the real clock.
func NewTokens(r TokenRequester, clk clock.PassiveClock) (*Tokens, error) {
	if r == nil {
		return nil, errors.New("volume: NewTokens: requester is nil")
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Tokens{requester: r, clock: clk, cache: map[tokenKey]*authv1.TokenRequest{}}, nil
}

// Token is pod's token for src: its service account (spec.serviceAccountName,
// "default" when empty), audience (none: the API server's) and lifetime
// (default 1 h), bound to the pod.
func (t *Tokens) Token(ctx context.Context, pod *v1.Pod, src *v1.ServiceAccountTokenProjection) (string, error) {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	exp := int64(DefaultTokenExpirationSeconds)
	if src.ExpirationSeconds != nil {
		exp = *src.ExpirationSeconds
	}
	key := tokenKey{pod.Namespace, sa, src.Audience, exp, pod.UID}
	now := t.clock.Now()

	t.mu.Lock()
	t.dropExpired(now)
	cached := t.cache[key]
	t.mu.Unlock()
	if cached != nil && !needsRefresh(cached, now) {
		return cached.Status.Token, nil
	}

	req := &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &exp,
		BoundObjectRef: &authv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}}}
	if src.Audience != "" {
		req.Spec.Audiences = []string{src.Audience}
	}
	tr, err := t.requester.CreateToken(ctx, pod.Namespace, sa, req)
	if err != nil {
		if cached != nil {
			return cached.Status.Token, nil // still valid: dropExpired kept it
		}
		return "", fmt.Errorf("token of serviceaccount %s/%s: %w", pod.Namespace, sa, err)
	}
	if tr.Spec.ExpirationSeconds == nil {
		tr.Spec.ExpirationSeconds = &exp
	}
	t.mu.Lock()
	t.cache[key] = tr
	t.mu.Unlock()
	return tr.Status.Token, nil
}

// needsRefresh: past 80% of the lifetime or 24 h since issue, each less a
// jitter so that many pods' tokens do not refresh together.
func needsRefresh(tr *authv1.TokenRequest, now time.Time) bool {
	exp := tr.Status.ExpirationTimestamp.Time
	ttl := time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
	issued := exp.Add(-ttl)
	jitter := time.Duration(rand.Float64() * float64(tokenMaxJitter))
	return now.After(issued.Add(tokenMaxTTL-jitter)) || now.After(exp.Add(-ttl/5-jitter))
}

func (t *Tokens) dropExpired(now time.Time) {
	for k, tr := range t.cache {
		if !now.Before(tr.Status.ExpirationTimestamp.Time) {
			delete(t.cache, k)
		}
	}
}

// ForgetPod drops the tokens of a pod that is gone.
func (t *Tokens) ForgetPod(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.cache {
		if k.pod == uid {
			delete(t.cache, k)
		}
	}
}

// cached is how many tokens are held (for tests).
func (t *Tokens) cached() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.cache)
}
