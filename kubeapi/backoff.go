package kubeapi

import (
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// WatchBackoff is the retry schedule of a node agent's watches (its pods,
// its Node): 0.8 s doubling up to 5 s, each wait jittered up to twice that,
// for cache.ReflectorOptions.Backoff.
//
// Deviation from the kubelet, whose reflectors use client-go's default
// (0.8 s doubling up to 30 s, so [30, 60) s apart once the API server has
// been away for a minute): after an API server outage a pod created on
// the node waited up to a minute to be seen. At most one list per 5–10 s
// per node while the API server is away is still a small load, and a
// throttled reflector (429) backs off the same way.
func WatchBackoff() *wait.Backoff {
	const initial, limit = 800 * time.Millisecond, 5 * time.Second
	return &wait.Backoff{Duration: initial, Cap: limit, Steps: int((limit + initial - 1) / initial), Factor: 2, Jitter: 1}
}
