package podstatus

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
)

// Failure is why a container's last start failed: the waiting reason
// shown in its status (CrashLoopBackOff, ErrImagePull, ImagePullBackOff,
// CreateContainerConfigError, ...) and the detail.
type Failure struct {
	Reason  string
	Message string
}

// SyncResult is what the reason cache reads of a sync: its tries to start
// containers. *kuberuntime.SyncResult implements it.
type SyncResult interface {
	StartResults() []kc.StartResult
}

// ReasonCache is the kubelet's reason cache: each container's last failed
// start, kept from sync to sync until a start succeeds, so the status
// shows CrashLoopBackOff while a sync that had nothing to do runs in
// between. It is safe for concurrent use.
type ReasonCache struct {
	mu   sync.Mutex
	pods map[types.UID]map[string]Failure
}

// NewReasonCache returns an empty cache.
func NewReasonCache() *ReasonCache {
	return &ReasonCache{pods: map[types.UID]map[string]Failure{}}
}

// Update records the start tries of a sync of the pod uid: a failure
// replaces the container's reason, a success clears it.
func (c *ReasonCache) Update(uid types.UID, res SyncResult) {
	if res == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range res.StartResults() {
		reasons := c.pods[uid]
		if r.Reason == "" {
			delete(reasons, r.Container)
			if len(reasons) == 0 {
				delete(c.pods, uid)
			}
			continue
		}
		if reasons == nil {
			reasons = map[string]Failure{}
			c.pods[uid] = reasons
		}
		reasons[r.Container] = Failure{Reason: r.Reason, Message: r.Message}
	}
}

// Get returns a copy of the pod's reasons by container name.
func (c *ReasonCache) Get(uid types.UID) map[string]Failure {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pods[uid]) == 0 {
		return nil
	}
	out := make(map[string]Failure, len(c.pods[uid]))
	for k, v := range c.pods[uid] {
		out[k] = v
	}
	return out
}

// Remove forgets the pod.
func (c *ReasonCache) Remove(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pods, uid)
}
