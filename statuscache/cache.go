package statuscache

import (
	"context"
	"slices"
	"sync"
	"time"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"

	"k8s.io/apimachinery/pkg/types"
)

// data is one cached entry; never mutated once stored, so it can be handed
// to several waiters without copying.
type data struct {
	status   *kc.PodStatus
	err      error
	modified time.Time
}

// subRecord is a blocked GetNewerThan. ch has room for one value so
// notify never blocks while holding the lock.
type subRecord struct {
	time time.Time
	ch   chan *data
}

// Cache holds the latest pod statuses. The zero value is not usable; call New.
type Cache struct {
	lock        sync.RWMutex
	pods        map[types.UID]*data
	timestamp   *time.Time // global: every pod is at least this fresh
	subscribers map[types.UID][]subRecord
}

// New returns an empty cache.
func New() *Cache {
	return &Cache{
		pods:        map[types.UID]*data{},
		subscribers: map[types.UID][]subRecord{},
	}
}

// Get returns the cached status and error of the pod, or an empty status
// with only ID set if there is none.
func (c *Cache) Get(uid types.UID) (*kc.PodStatus, error) {
	c.lock.RLock()
	defer c.lock.RUnlock()
	d := c.get(uid)
	return d.status, d.err
}

// GetNewerThan returns the pod's status once the cache holds data newer than
// minTime, blocking until a Set or UpdateTime provides it or ctx ends (then
// it returns ctx.Err()).
func (c *Cache) GetNewerThan(ctx context.Context, uid types.UID, minTime time.Time) (*kc.PodStatus, error) {
	ch := c.subscribe(uid, minTime)
	// Data already there wins over a done ctx; a two-way select would pick at random.
	select {
	case d := <-ch:
		chanPool.Put(ch)
		return d.status, d.err
	default:
	}
	select {
	case d := <-ch:
		chanPool.Put(ch)
		return d.status, d.err
	case <-ctx.Done():
		c.unsubscribe(uid, ch)
		return nil, ctx.Err()
	}
}

// chanPool recycles waiter channels: a buffered chan of pointers is two
// allocations, paid by every blocked pod worker on every sync. A channel goes
// back only when empty and no longer subscribed, so no send can reach it.
var chanPool = sync.Pool{New: func() any { return make(chan *data, 1) }}

// Set stores the pod's status and error as read at timestamp, and wakes the
// waiters it satisfies. It returns false, keeping the cached entry, when that
// entry is newer than timestamp.
func (c *Cache) Set(uid types.UID, status *kc.PodStatus, err error, timestamp time.Time) (updated bool) {
	c.lock.Lock()
	defer c.lock.Unlock()
	// Evented PLEG: events and relists race; the newer observation wins.
	if cached, ok := c.pods[uid]; ok && cached.modified.After(timestamp) {
		return false
	}
	c.pods[uid] = &data{status: status, err: err, modified: timestamp}
	c.notify(uid, timestamp)
	return true
}

// Delete removes the pod's entry. Its waiters stay subscribed: a later Set or
// UpdateTime still wakes them.
func (c *Cache) Delete(uid types.UID) {
	c.lock.Lock()
	defer c.lock.Unlock()
	delete(c.pods, uid)
}

// UpdateTime records that every pod's data is current as of timestamp and
// wakes every waiter this satisfies.
func (c *Cache) UpdateTime(timestamp time.Time) {
	c.lock.Lock()
	defer c.lock.Unlock()
	c.timestamp = &timestamp
	for uid := range c.subscribers {
		c.notify(uid, timestamp)
	}
}

// Len returns the number of cached entries.
func (c *Cache) Len() int {
	c.lock.RLock()
	defer c.lock.RUnlock()
	return len(c.pods)
}

func defaultData(uid types.UID) *data {
	return &data{status: &kc.PodStatus{ID: uid}}
}

func (c *Cache) get(uid types.UID) *data {
	if d, ok := c.pods[uid]; ok {
		return d
	}
	return defaultData(uid)
}

// getIfNewerThan returns the data if it is newer than minTime, else nil.
// Strictly After, as in the kubelet: data read at exactly minTime might
// predate the caller's action.
func (c *Cache) getIfNewerThan(uid types.UID, minTime time.Time) *data {
	globalNewer := c.timestamp != nil && c.timestamp.After(minTime)
	d, ok := c.pods[uid]
	switch {
	case !ok && globalNewer:
		return defaultData(uid)
	case ok && (d.modified.After(minTime) || globalNewer):
		return d
	}
	return nil
}

// notify delivers to the uid's waiters whose time is not after timestamp.
// Caller holds the write lock.
func (c *Cache) notify(uid types.UID, timestamp time.Time) {
	list, ok := c.subscribers[uid]
	if !ok {
		return
	}
	keep := list[:0]
	for _, r := range list {
		if timestamp.Before(r.time) {
			keep = append(keep, r)
			continue
		}
		r.ch <- c.get(uid)
	}
	clear(list[len(keep):]) // drop delivered channels for the GC
	if len(keep) == 0 {
		delete(c.subscribers, uid)
	} else {
		c.subscribers[uid] = keep
	}
}

func (c *Cache) subscribe(uid types.UID, minTime time.Time) chan *data {
	ch := chanPool.Get().(chan *data)
	c.lock.Lock()
	defer c.lock.Unlock()
	if d := c.getIfNewerThan(uid, minTime); d != nil {
		ch <- d
		return ch
	}
	c.subscribers[uid] = append(c.subscribers[uid], subRecord{time: minTime, ch: ch})
	return ch
}

// unsubscribe removes a cancelled waiter. If notify already delivered to it,
// it is gone from the list and the value is dropped. Either way no send can
// follow (sends happen under the lock, to listed waiters), so ch is reusable.
func (c *Cache) unsubscribe(uid types.UID, ch chan *data) {
	c.lock.Lock()
	defer c.lock.Unlock()
	defer func() {
		select {
		case <-ch:
		default:
		}
		chanPool.Put(ch)
	}()
	list := c.subscribers[uid]
	for i, r := range list {
		if r.ch != ch {
			continue
		}
		list = slices.Delete(list, i, i+1) // zeroes the vacated tail slot
		if len(list) == 0 {
			delete(c.subscribers, uid)
		} else {
			c.subscribers[uid] = list
		}
		return
	}
}
