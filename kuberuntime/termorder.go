package kuberuntime

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// termOrder makes a pod with sidecars stop in the kubelet's order
// (kuberuntime_termination_order.go): regular containers at once, each
// sidecar only once every regular container and every later sidecar has
// exited, so sidecars stop in reverse spec order and the regular
// containers keep their sidecars (proxies, log shippers) to the end. A
// container waits no longer than its grace period.
type termOrder struct {
	clock clock.Clock
	// exited has one channel per running container, closed once it has
	// stopped (containers not running get a closed one, not kept here).
	exited map[string]chan struct{}
	// waitFor lists, per sidecar, the channels it waits on.
	waitFor map[string][]chan struct{}
	mu      sync.Mutex
}

// newTermOrder returns the ordering for the pod's running containers, or
// nil when the pod has no sidecar (all stop in parallel).
func newTermOrder(clk clock.Clock, pod *v1.Pod, running []string) *termOrder {
	if !hasRestartableInitContainer(pod) {
		return nil
	}
	o := &termOrder{clock: clk, exited: map[string]chan struct{}{}, waitFor: map[string][]chan struct{}{}}
	isRunning := map[string]bool{}
	for _, n := range running {
		isRunning[n] = true
	}
	channel := func(name string) chan struct{} {
		ch := make(chan struct{})
		if !isRunning[name] {
			close(ch) // nothing to wait for
			return ch
		}
		o.exited[name] = ch
		return ch
	}
	var regular []chan struct{}
	for i := range pod.Spec.Containers {
		regular = append(regular, channel(pod.Spec.Containers[i].Name))
	}
	var later chan struct{} // the next sidecar in spec order
	for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
		c := &pod.Spec.InitContainers[i]
		ch := channel(c.Name)
		if !IsRestartableInitContainer(c) {
			continue
		}
		o.waitFor[c.Name] = append(o.waitFor[c.Name], regular...)
		if later != nil {
			o.waitFor[c.Name] = append(o.waitFor[c.Name], later)
		}
		later = ch
	}
	return o
}

// waitForTurn blocks until the container may stop or grace seconds have
// passed, and returns how long it waited.
func (o *termOrder) waitForTurn(name string, grace int64) time.Duration {
	if grace <= 0 {
		return 0
	}
	start := o.clock.Now()
	timer := o.clock.NewTimer(time.Duration(grace) * time.Second)
	defer timer.Stop()
	for _, ch := range o.waitFor[name] {
		select {
		case <-ch:
		case <-timer.C():
			return o.clock.Since(start)
		}
	}
	return o.clock.Since(start)
}

// stopped records that the container has stopped.
func (o *termOrder) stopped(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ch, ok := o.exited[name]; ok {
		close(ch)
		delete(o.exited, name)
	}
}
