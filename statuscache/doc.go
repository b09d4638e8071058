// Package statuscache is the kubelet's pod status cache
// (pkg/kubelet/container/cache.go): the last runtime status seen for each
// pod, keyed by pod UID, with the time it was read.
//
// Why it exists: a pod worker that has just acted on a pod (started a
// container, killed a sandbox) must not decide its next step from a status
// read before that action. So it remembers when it acted and calls
// GetNewerThan with that time, which blocks until the PLEG has observed the
// runtime after it: either by Set with a status read at or after that time,
// or by UpdateTime after a relist that found every pod up to date.
//
// Set follows the evented-PLEG rule: a status older than the cached one is
// refused, so a slow relist cannot overwrite what a newer event recorded.
// The cache never reads the clock; every time is passed in.
//
// Usage:
//
//	c := statuscache.New()
//
//	// PLEG, after each relist:
//	start := time.Now()
//	for _, p := range pods {
//		status, err := runtime.GetPodStatus(ctx, p.UID, p.Name, p.Namespace)
//		c.Set(p.UID, status, err, start)
//	}
//	c.UpdateTime(start)
//
//	// pod worker, before syncing:
//	status, err := c.GetNewerThan(ctx, pod.UID, lastSyncTime)
//	if err != nil {
//		return err // ctx ended, or the runtime failed to report the pod
//	}
//
// Returned statuses are shared with the cache and other readers: treat them
// as read-only.
package statuscache
