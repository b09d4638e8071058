package podworkers

import (
	"context"
	"sync/atomic"
	"time"
)

// StatusReadAt tells the pod workers, from within a PodSyncer's Sync, that
// the pod's status was read into the status cache at at (the time taken
// before the read), after the last thing this Work did to the pod. The
// pod's next Work then waits only for a status read at or after at, which
// the cache already holds, instead of one read after this Work ended: a
// status reader (the PLEG) need not read the pod again for it, and a sync
// an event asks for runs at once. Outside a Work's context it does
// nothing.
func StatusReadAt(ctx context.Context, at time.Time) {
	if r, ok := ctx.Value(readBackKey{}).(*readBack); ok {
		r.at.Store(&at)
	}
}

type readBackKey struct{}

// readBack is where one Work's StatusReadAt lands.
type readBack struct{ at atomic.Pointer[time.Time] }

func withReadBack(ctx context.Context) (context.Context, *readBack) {
	r := &readBack{}
	return context.WithValue(ctx, readBackKey{}, r), r
}
