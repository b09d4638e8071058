package statuscache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nodekit-dev/nodekit/internal/poll"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/types"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// t0 is a fixed instant: the cache never reads the clock, so neither do tests.
var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func status(uid types.UID, name string) *kc.PodStatus {
	return &kc.PodStatus{ID: uid, Name: name, Namespace: "ns"}
}

// waiters is a test hook: how many GetNewerThan calls are blocked on uid.
func (c *Cache) waiters(uid types.UID) int {
	c.lock.RLock()
	defer c.lock.RUnlock()
	return len(c.subscribers[uid])
}

func (c *Cache) totalWaiters() int {
	c.lock.RLock()
	defer c.lock.RUnlock()
	n := 0
	for _, l := range c.subscribers {
		n += len(l)
	}
	return n
}

// awaitWaiters yields until n waiters are registered on uid: no wall-clock sleep.
func awaitWaiters(tb testing.TB, c *Cache, uid types.UID, n int) {
	tb.Helper()
	poll.Eventually(tb, func() bool { return c.waiters(uid) == n }, 10*time.Second, 0, "waiters(%q) = %d", uid, n)
}

type result struct {
	status *kc.PodStatus
	err    error
}

// getAsync runs GetNewerThan in a goroutine; its result arrives on the channel.
func getAsync(ctx context.Context, c *Cache, uid types.UID, minTime time.Time) <-chan result {
	out := make(chan result, 1)
	go func() {
		s, err := c.GetNewerThan(ctx, uid, minTime)
		out <- result{s, err}
	}()
	return out
}

func requireBlocked(t *testing.T, ch <-chan result) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("GetNewerThan returned early: %+v", r)
	default:
	}
}

func TestGetMiss(t *testing.T) {
	c := New()
	s, err := c.Get("nope")
	require.NoError(t, err)
	assert.Equal(t, &kc.PodStatus{ID: "nope"}, s)
	assert.Zero(t, c.Len())
}

func TestSetGet(t *testing.T) {
	errRuntime := errors.New("runtime down")
	tests := []struct {
		name      string
		first     time.Time
		second    time.Time
		wantSet2  bool
		wantName  string
		wantError error
	}{
		{name: "newer overwrites", first: at(1), second: at(2), wantSet2: true, wantName: "second", wantError: errRuntime},
		{name: "equal overwrites", first: at(1), second: at(1), wantSet2: true, wantName: "second", wantError: errRuntime},
		{name: "older refused", first: at(2), second: at(1), wantSet2: false, wantName: "first"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New()
			require.True(t, c.Set("u", status("u", "first"), nil, tt.first))
			assert.Equal(t, tt.wantSet2, c.Set("u", status("u", "second"), errRuntime, tt.second))
			s, err := c.Get("u")
			assert.Equal(t, tt.wantName, s.Name)
			assert.Equal(t, tt.wantError, err)
			assert.Equal(t, 1, c.Len())
		})
	}
}

func TestGetNewerThanImmediate(t *testing.T) {
	errRuntime := errors.New("boom")
	tests := []struct {
		name    string
		setup   func(c *Cache)
		minTime time.Time
		want    *kc.PodStatus
		wantErr error
	}{
		{
			name:    "entry newer",
			setup:   func(c *Cache) { c.Set("u", status("u", "p"), errRuntime, at(2)) },
			minTime: at(1),
			want:    status("u", "p"),
			wantErr: errRuntime,
		},
		{
			name: "global timestamp newer",
			setup: func(c *Cache) {
				c.Set("u", status("u", "p"), nil, at(0))
				c.UpdateTime(at(2))
			},
			minTime: at(1),
			want:    status("u", "p"),
		},
		{
			name:    "missing entry, global timestamp newer",
			setup:   func(c *Cache) { c.UpdateTime(at(2)) },
			minTime: at(1),
			want:    &kc.PodStatus{ID: "u"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New()
			tt.setup(c)
			// A cancelled ctx proves no blocking: data already there wins.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			s, err := c.GetNewerThan(ctx, "u", tt.minTime)
			assert.Equal(t, tt.wantErr, err)
			assert.Equal(t, tt.want, s)
			assert.Zero(t, c.waiters("u"))
		})
	}
}

func TestGetNewerThanBlocksUntilNewer(t *testing.T) {
	minTime := at(10)
	tests := []struct {
		name  string
		setup func(c *Cache) // state under which the call must block
		// keepMissing skips the older Set on "u", which would create the entry.
		keepMissing bool
		wake        func(c *Cache)
		want        *kc.PodStatus
	}{
		{
			name: "missing entry, Set at minTime",
			wake: func(c *Cache) { c.Set("u", status("u", "new"), nil, minTime) },
			want: status("u", "new"),
		},
		{
			name:  "entry at minTime is not newer, Set after",
			setup: func(c *Cache) { c.Set("u", status("u", "old"), nil, minTime) },
			wake:  func(c *Cache) { c.Set("u", status("u", "new"), nil, at(11)) },
			want:  status("u", "new"),
		},
		{
			name: "global timestamp at minTime is not newer, UpdateTime",
			setup: func(c *Cache) {
				c.Set("u", status("u", "old"), nil, at(5))
				c.UpdateTime(minTime)
			},
			wake: func(c *Cache) { c.UpdateTime(minTime) },
			want: status("u", "stale"), // the older Set was stored, just did not wake
		},
		{
			name:        "entry older, UpdateTime at minTime",
			setup:       func(c *Cache) { c.Set("u", status("u", "old"), nil, at(5)) },
			keepMissing: true,
			wake:        func(c *Cache) { c.UpdateTime(minTime) },
			want:        status("u", "old"),
		},
		{
			name:        "missing entry, UpdateTime gives default status",
			keepMissing: true,
			wake:        func(c *Cache) { c.UpdateTime(at(11)) },
			want:        &kc.PodStatus{ID: "u"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New()
			if tt.setup != nil {
				tt.setup(c)
			}
			got := getAsync(context.Background(), c, "u", minTime)
			awaitWaiters(t, c, "u", 1)
			requireBlocked(t, got)

			// Older news must not wake it.
			if !tt.keepMissing {
				c.Set("u", status("u", "stale"), nil, at(9))
			}
			c.UpdateTime(at(9))
			c.Set("other", status("other", "x"), nil, at(20))
			requireBlocked(t, got)
			assert.Equal(t, 1, c.waiters("u"))

			tt.wake(c)
			r := <-got
			require.NoError(t, r.err)
			assert.Equal(t, tt.want, r.status)
			assert.Zero(t, c.waiters("u"))
		})
	}
}

func TestSetRefusedDoesNotWake(t *testing.T) {
	c := New()
	c.Set("u", status("u", "newest"), nil, at(20))
	// The waiter wants data from 25 on; a refused Set (19 < 20) must not wake it.
	got := getAsync(context.Background(), c, "u", at(25))
	awaitWaiters(t, c, "u", 1)
	assert.False(t, c.Set("u", status("u", "older"), nil, at(19)))
	requireBlocked(t, got)
	assert.True(t, c.Set("u", status("u", "fresh"), nil, at(25)))
	r := <-got
	assert.Equal(t, "fresh", r.status.Name)
}

func TestUpdateTimeWakesAllPods(t *testing.T) {
	c := New()
	c.Set("a", status("a", "a"), nil, at(1))
	var got []<-chan result
	uids := []types.UID{"a", "b", "c"}
	for _, uid := range uids {
		got = append(got, getAsync(context.Background(), c, uid, at(5)))
		awaitWaiters(t, c, uid, 1)
	}
	late := getAsync(context.Background(), c, "c", at(7)) // not satisfied by 6
	awaitWaiters(t, c, "c", 2)

	c.UpdateTime(at(6))
	want := []*kc.PodStatus{status("a", "a"), {ID: "b"}, {ID: "c"}}
	for i, ch := range got {
		r := <-ch
		require.NoError(t, r.err)
		assert.Equal(t, want[i], r.status, uids[i])
	}
	requireBlocked(t, late)
	assert.Equal(t, 1, c.waiters("c"))
	c.UpdateTime(at(7))
	assert.Equal(t, &kc.PodStatus{ID: "c"}, (<-late).status)
	assert.Zero(t, c.totalWaiters())
}

func TestGetNewerThanContext(t *testing.T) {
	tests := []struct {
		name    string
		ctx     func() (context.Context, context.CancelFunc)
		wantErr error
	}{
		{name: "cancel", ctx: func() (context.Context, context.CancelFunc) {
			return context.WithCancel(context.Background())
		}, wantErr: context.Canceled},
		{name: "deadline", ctx: func() (context.Context, context.CancelFunc) {
			// Deadline in the past: expires without waiting on the clock.
			return context.WithDeadline(context.Background(), time.Unix(0, 0))
		}, wantErr: context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New()
			other := getAsync(context.Background(), c, "u", at(1))
			awaitWaiters(t, c, "u", 1)

			ctx, cancel := tt.ctx()
			got := getAsync(ctx, c, "u", at(1))
			if tt.wantErr == context.Canceled {
				awaitWaiters(t, c, "u", 2)
				requireBlocked(t, got)
			}
			cancel()
			r := <-got
			assert.ErrorIs(t, r.err, tt.wantErr)
			assert.Nil(t, r.status)
			assert.Equal(t, 1, c.waiters("u"), "only the cancelled subscription is removed")

			c.Set("u", status("u", "p"), nil, at(1))
			assert.Equal(t, "p", (<-other).status.Name)
			assert.Zero(t, c.totalWaiters())
		})
	}
}

func TestDeleteKeepsWaiters(t *testing.T) {
	c := New()
	c.Set("u", status("u", "old"), nil, at(1))
	got := getAsync(context.Background(), c, "u", at(5))
	awaitWaiters(t, c, "u", 1)

	c.Delete("u")
	assert.Zero(t, c.Len())
	s, err := c.Get("u")
	require.NoError(t, err)
	assert.Equal(t, &kc.PodStatus{ID: "u"}, s)
	requireBlocked(t, got)
	assert.Equal(t, 1, c.waiters("u"))

	// Deleting forgets the old modified time: an older Set is accepted now.
	assert.True(t, c.Set("u", status("u", "new"), nil, at(5)))
	assert.Equal(t, "new", (<-got).status.Name)
}

func TestConcurrentReadersWriters(t *testing.T) {
	const (
		pods    = 8
		writers = 4
		readers = 8
		rounds  = 500
	)
	uid := func(i int) types.UID { return types.UID(fmt.Sprintf("pod-%d", i%pods)) }
	c := New()
	var writing, reading sync.WaitGroup
	for w := range writers {
		writing.Go(func() {
			for i := range rounds {
				ts := at(i)
				c.Set(uid(i+w), status(uid(i+w), "s"), nil, ts)
				switch i % 50 {
				case 0:
					c.UpdateTime(ts)
				case 25:
					c.Delete(uid(i))
				}
			}
		})
	}
	for r := range readers {
		reading.Go(func() {
			for i := range rounds {
				s, err := c.Get(uid(i + r))
				if assert.NoError(t, err) {
					assert.Equal(t, uid(i+r), s.ID)
				}
				_ = c.Len()
			}
		})
		reading.Go(func() {
			// minTime < rounds, so the final UpdateTime below releases every call.
			for i := 0; i < rounds; i += 10 {
				s, err := c.GetNewerThan(context.Background(), uid(i+r), at(i))
				if assert.NoError(t, err) {
					assert.Equal(t, uid(i+r), s.ID)
				}
			}
		})
	}
	writing.Wait()
	c.UpdateTime(at(rounds)) // the last relist: wakes whoever is still waiting
	reading.Wait()
	assert.Zero(t, c.totalWaiters())
	assert.LessOrEqual(t, c.Len(), pods)
}

// TestCancelRacesDelivery races ctx cancellation against Set. Whichever wins,
// the waiter's channel is recycled; a stale value left in it would make the
// next blocked call return at once with another pod's data.
func TestCancelRacesDelivery(t *testing.T) {
	c := New()
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	for i := range 2000 {
		ctx, cancel := context.WithCancel(context.Background())
		got := getAsync(ctx, c, "u", at(i))
		awaitWaiters(t, c, "u", 1)
		var wg sync.WaitGroup
		wg.Go(cancel)
		wg.Go(func() { c.Set("u", status("u", "p"), nil, at(i)) })
		wg.Wait()
		r := <-got
		if r.err != nil {
			require.ErrorIs(t, r.err, context.Canceled)
		} else {
			require.Equal(t, "p", r.status.Name)
		}
		require.Zero(t, c.totalWaiters())

		s, err := c.GetNewerThan(done, "probe", at(1<<20))
		require.ErrorIs(t, err, context.Canceled, "stale value in a recycled channel: %+v", s)
	}
}
