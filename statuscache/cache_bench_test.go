package statuscache

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"

	"k8s.io/apimachinery/pkg/types"
)

const benchWaiters = 64

// waiterPool is benchWaiters goroutines started once and fed minTimes, so
// the benchmark measures the cache rather than goroutine creation.
type waiterPool struct {
	feed []chan time.Time
	done chan struct{}
	wg   sync.WaitGroup
}

func startWaiters(b *testing.B, c *Cache, uids []types.UID) *waiterPool {
	p := &waiterPool{done: make(chan struct{}, len(uids))}
	for _, uid := range uids {
		feed := make(chan time.Time, 1)
		p.feed = append(p.feed, feed)
		p.wg.Go(func() {
			for minTime := range feed {
				if s, err := c.GetNewerThan(context.Background(), uid, minTime); err != nil || s == nil {
					b.Errorf("GetNewerThan(%q) = %v, %v", uid, s, err)
				}
				p.done <- struct{}{}
			}
		})
	}
	return p
}

func (p *waiterPool) stop() {
	for _, f := range p.feed {
		close(f)
	}
	p.wg.Wait()
}

// awaitTotal yields until n waiters are blocked, so every iteration measures
// the subscribe-notify path rather than the already-newer fast path.
func awaitTotal(c *Cache, n int) {
	for c.totalWaiters() != n {
		runtime.Gosched()
	}
}

func BenchmarkGetNewerThan(b *testing.B) {
	distinct := make([]types.UID, benchWaiters)
	same := make([]types.UID, benchWaiters)
	for i := range distinct {
		distinct[i] = types.UID(fmt.Sprintf("pod-%d", i))
		same[i] = "pod-0"
	}
	pods := []struct {
		name string
		uids []types.UID // one per waiter
	}{
		{"distinct-pods", distinct},
		{"same-pod", same},
	}
	wakes := []struct {
		name string
		// wake releases every waiter of minTime ts-1 by writing ts.
		wake func(c *Cache, pods []types.UID, statuses map[types.UID]*kc.PodStatus, ts time.Time)
	}{
		{"set", func(c *Cache, pods []types.UID, statuses map[types.UID]*kc.PodStatus, ts time.Time) {
			for _, uid := range pods {
				c.Set(uid, statuses[uid], nil, ts)
			}
		}},
		{"update-time", func(c *Cache, _ []types.UID, _ map[types.UID]*kc.PodStatus, ts time.Time) {
			c.UpdateTime(ts)
		}},
	}
	for _, pp := range pods {
		for _, w := range wakes {
			b.Run(pp.name+"/"+w.name, func(b *testing.B) {
				c := New()
				statuses := map[types.UID]*kc.PodStatus{}
				var unique []types.UID
				for _, uid := range pp.uids {
					if _, ok := statuses[uid]; !ok {
						statuses[uid] = &kc.PodStatus{ID: uid}
						unique = append(unique, uid)
						c.Set(uid, statuses[uid], nil, t0)
					}
				}
				pool := startWaiters(b, c, pp.uids)
				defer pool.stop()

				b.ReportAllocs()
				b.ResetTimer()
				// Iteration i waits for data newer than t0+i ns and is woken at
				// t0+i+1 ns, which is not newer than the next iteration's minTime.
				for i := 0; b.Loop(); i++ {
					minTime := t0.Add(time.Duration(i))
					for _, f := range pool.feed {
						f <- minTime
					}
					awaitTotal(c, benchWaiters)
					w.wake(c, unique, statuses, minTime.Add(1))
					for range benchWaiters {
						<-pool.done
					}
				}
			})
		}
	}
}

func BenchmarkGetParallel(b *testing.B) {
	const pods = 1024
	c := New()
	uids := make([]types.UID, pods)
	for i := range uids {
		uids[i] = types.UID(fmt.Sprintf("pod-%d", i))
		c.Set(uids[i], &kc.PodStatus{ID: uids[i]}, nil, t0)
	}
	cases := []struct {
		name string
		uid  func(i int) types.UID
	}{
		{"hit", func(i int) types.UID { return uids[i%pods] }},
		{"miss", func(i int) types.UID { return "absent" }}, // allocates the default status
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i++ {
					if s, _ := c.Get(tc.uid(i)); s == nil {
						b.Error("nil status")
					}
				}
			})
		})
	}
}
