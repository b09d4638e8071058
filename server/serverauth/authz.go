package serverauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodekit-dev/nodekit/kubeapi"
)

// accessReviewer asks the API server's SubjectAccessReview whether a
// request is allowed, caching allowed answers for allowTTL and denied ones
// for denyTTL (errors are not cached).
type accessReviewer struct {
	client            kubeapi.Creator[*authzv1.SubjectAccessReview]
	cache             *expiring[bool]
	allowTTL, denyTTL time.Duration
	now               func() time.Time
}

func (s *accessReviewer) allowed(ctx context.Context, a Attributes) (bool, error) {
	spec := authzv1.SubjectAccessReviewSpec{User: a.User.Name, UID: a.User.UID, Groups: a.User.Groups,
		ResourceAttributes: &authzv1.ResourceAttributes{Verb: a.Verb, Version: a.APIVersion, Resource: a.Resource,
			Subresource: a.Subresource, Name: a.Name}}
	if len(a.User.Extra) > 0 {
		spec.Extra = make(map[string]authzv1.ExtraValue, len(a.User.Extra))
		for k, v := range a.User.Extra {
			spec.Extra[k] = v
		}
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return false, err
	}
	key := string(raw)
	if allowed, found := s.cache.get(key, s.now()); found {
		return allowed, nil
	}
	ctx, cancel := context.WithTimeout(ctx, webhookTimeout)
	defer cancel()
	var res *authzv1.SubjectAccessReview
	err = withRetries(ctx, func() (err error) {
		res, err = s.client.Create(ctx, &authzv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return false, fmt.Errorf("SubjectAccessReview: %w", err)
	}
	ttl := s.denyTTL
	if res.Status.Allowed {
		ttl = s.allowTTL
	}
	s.cache.put(key, res.Status.Allowed, s.now(), ttl)
	return res.Status.Allowed, nil
}

// withRetries calls f until it succeeds, fails for good, or the API
// server's webhook back-off (0.5s, x1.5, jitter 0.2, 5 tries) ends: a
// request that did not reach the API server, 429 and 5xx are tried again.
func withRetries(ctx context.Context, f func() error) error {
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5},
		func(context.Context) (bool, error) {
			last = f()
			switch {
			case last == nil:
				return true, nil
			case retriable(last):
				return false, nil
			}
			return false, last
		})
	if err != nil && last != nil {
		return last
	}
	return err
}

func retriable(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true // not an answer of the API server: a transport error
	}
	code := status.Status().Code
	return code == 429 || code >= 500
}

// expiring is a bounded map of answers that expire; when full, expired
// answers go, then all (the webhooks are asked again).
type expiring[V any] struct {
	mu      sync.Mutex
	max     int
	entries map[string]expiringEntry[V]
}

type expiringEntry[V any] struct {
	v       V
	expires time.Time
}

func newExpiring[V any](max int) *expiring[V] {
	return &expiring[V]{max: max, entries: map[string]expiringEntry[V]{}}
}

func (c *expiring[V]) get(key string, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !now.Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.v, true
}

func (c *expiring[V]) put(key string, v V, now time.Time, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.max {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
	}
	if len(c.entries) >= c.max {
		clear(c.entries)
	}
	c.entries[key] = expiringEntry[V]{v, now.Add(ttl)}
}
