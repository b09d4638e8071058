package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/go-logr/logr"
	"github.com/nodekit-dev/nodekit/cgroupmgr"
	"github.com/nodekit-dev/nodekit/pleg"
	"github.com/nodekit-dev/nodekit/podsource"
	"github.com/nodekit-dev/nodekit/prober"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/statuscache"
	"github.com/prometheus/client_golang/prometheus"
)

type agent struct {
	cfg           config
	log           logr.Logger
	clock         clock.WithTicker
	mgr           *runtime.Manager
	cache         *statuscache.Cache
	pleg          *pleg.GenericPLEG
	prober        *prober.Manager
	runtimePrefix string

	cgroups   *cgroupmgr.Manager // nil: --cgroups-per-qos=false
	mux       *podsource.Mux
	criClient *runtime.Client // for container log paths
	volumes   volumes
	started   time.Time
	registry  *prometheus.Registry
	sources   []interface {
		Run(context.Context) error
		Name() string
	}

	mu      sync.Mutex
	workers map[types.UID]*podWorker
}

// apply acts on one update from the pod sources: new pods get a worker,
// changed ones a new spec, removed ones are killed; status-only changes
// (RECONCILE) need nothing from a standalone node.
func (a *agent) apply(ctx context.Context, u podsource.PodUpdate) {
	a.mu.Lock()
	defer a.mu.Unlock()
	defer a.updateQOS()
	for _, pod := range u.Pods {
		w := a.workers[pod.UID]
		switch u.Op {
		case podsource.ADD, podsource.SET:
			if w != nil {
				continue
			}
			if len(a.workers) >= a.cfg.maxPods {
				// The kubelet's admission: OutOfpods.
				a.log.Info("pod rejected: node has reached --max-pods", "pod", podName(pod), "maxPods", a.cfg.maxPods)
				continue
			}
			a.log.Info("pod added", "pod", podName(pod), "uid", pod.UID, "source", u.Source)
			w = newPodWorker(pod, u.Source)
			a.workers[pod.UID] = w
			a.prober.AddPod(pod)
			go a.runWorker(ctx, w)
		case podsource.UPDATE:
			if w != nil {
				w.setPod(pod)
				w.poke()
			}
		case podsource.REMOVE, podsource.DELETE:
			if w == nil {
				continue
			}
			a.log.Info("pod removed from its source", "pod", podName(pod), "source", u.Source)
			close(w.stop)
			delete(a.workers, pod.UID)
		}
	}
}

// updateQOS resizes the Burstable cgroup to its pods' requests (a.mu held).
func (a *agent) updateQOS() {
	if a.cgroups == nil {
		return
	}
	pods := make([]*v1.Pod, 0, len(a.workers))
	for _, w := range a.workers {
		pods = append(pods, w.spec())
	}
	if err := a.cgroups.UpdateQOSCgroups(pods); err != nil {
		a.log.Error(err, "updating QoS cgroups")
	}
}

// housekeeping removes the cgroups of pods that are gone (once every source
// has delivered, so a pod not yet re-read after a restart is not taken for
// an orphan); cgroups with processes left are reported, not removed.
func (a *agent) housekeeping() {
	if a.cgroups == nil || !a.mux.AllSourcesReady() {
		return
	}
	a.mu.Lock()
	active := make(map[types.UID]bool, len(a.workers))
	for uid := range a.workers {
		active[uid] = true
	}
	a.mu.Unlock()
	if _, err := a.cgroups.CleanupOrphans(active); err != nil {
		a.log.Error(err, "orphaned pod cgroups")
	}
}

// pokePod asks the pod's worker for a sync.
func (a *agent) pokePod(uid types.UID) {
	a.mu.Lock()
	w := a.workers[uid]
	a.mu.Unlock()
	if w != nil {
		w.poke()
	}
}

func (a *agent) pokeAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, w := range a.workers {
		w.poke()
	}
}

// pods returns every pod with its current status.
func (a *agent) pods() []v1.Pod {
	a.mu.Lock()
	ws := make([]*podWorker, 0, len(a.workers))
	for _, w := range a.workers {
		ws = append(ws, w)
	}
	a.mu.Unlock()
	out := make([]v1.Pod, 0, len(ws))
	for _, w := range ws {
		out = append(out, w.apiPod())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// waitWorkers waits for every worker to finish (after ctx ended or stop).
func (a *agent) waitWorkers() {
	a.mu.Lock()
	ws := make([]*podWorker, 0, len(a.workers))
	for _, w := range a.workers {
		ws = append(ws, w)
	}
	a.mu.Unlock()
	for _, w := range ws {
		<-w.done
	}
}

// summarize lists each container's state, e.g. "web=running(0)".
func summarize(s v1.PodStatus) string {
	var parts []string
	for _, c := range append(append([]v1.ContainerStatus{}, s.InitContainerStatuses...), s.ContainerStatuses...) {
		state := "waiting"
		switch {
		case c.State.Running != nil:
			state = "running"
			if c.Ready {
				state += ",ready"
			}
		case c.State.Terminated != nil:
			state = fmt.Sprintf("exited:%d", c.State.Terminated.ExitCode)
		case c.State.Waiting != nil:
			state = c.State.Waiting.Reason
		}
		parts = append(parts, fmt.Sprintf("%s=%s(%d)", c.Name, state, c.RestartCount))
	}
	return strings.Join(parts, " ")
}

func podName(p *v1.Pod) string { return p.Namespace + "/" + p.Name }
