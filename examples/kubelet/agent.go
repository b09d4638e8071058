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
	"github.com/nodekit-dev/nodekit/podpath"
	"github.com/nodekit-dev/nodekit/podsource"
	"github.com/nodekit-dev/nodekit/prober"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/statuscache"
	"github.com/nodekit-dev/nodekit/volume"
	"github.com/prometheus/client_golang/prometheus"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
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
	volumes   *volume.Manager
	layout    podpath.Layout // --root-dir, --pod-logs-dir
	started   time.Time
	registry  *prometheus.Registry
	sources   []interface {
		Run(context.Context) error
		Name() string
	}

	orphanWG sync.WaitGroup // orphan kills in flight

	mu      sync.Mutex
	workers map[types.UID]*podWorker
	// stopping holds the workers told to stop, until housekeeping sees them
	// done: a static pod's new version (a new UID) starts only after the
	// old one is gone, as in the kubelet, so both never hold the same host
	// port or volume at once; and orphan clean-up leaves them alone.
	stopping map[types.UID]*podWorker
	// orphans are runtime pods no source wants, being killed.
	orphans map[types.UID]bool
}

// nodeLabel marks the sandboxes this agent creates with its node name, so
// orphan clean-up never touches pods of another agent sharing the runtime.
const nodeLabel = "nodekit.dev/node"

// previousOf returns the done channel of a stopping worker of a pod with
// pod's full name (a.mu held), or nil.
func (a *agent) previousOf(pod *v1.Pod) <-chan struct{} {
	for _, w := range a.stopping {
		if w.pod.Namespace == pod.Namespace && w.pod.Name == pod.Name {
			return w.done
		}
	}
	return nil
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
			go a.runWorker(ctx, w, a.previousOf(pod))
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
			a.stopping[pod.UID] = w
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

// housekeeping, as the kubelet's HandlePodCleanups, once every source has
// delivered (so a pod not yet re-read after a restart is not taken for an
// orphan): kills and removes runtime pods no source wants (left by a
// manifest deleted while the agent was down, or a failed termination), and
// removes the cgroups of pods that are gone; cgroups with processes left
// are reported, not removed.
func (a *agent) housekeeping(ctx context.Context) {
	a.mu.Lock()
	for uid, w := range a.stopping {
		select {
		case <-w.done:
			delete(a.stopping, uid)
		default:
		}
	}
	a.mu.Unlock()
	if !a.mux.AllSourcesReady() {
		return
	}
	a.killOrphans(ctx)
	if a.cgroups == nil {
		return
	}
	if _, err := a.cgroups.CleanupOrphans(a.activeUIDs()); err != nil {
		a.log.Error(err, "orphaned pod cgroups")
	}
}

// activeUIDs are the pods the agent has: running, stopping, or being
// killed as orphans (their cgroups and logs go once they are removed).
func (a *agent) activeUIDs() map[types.UID]bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	active := make(map[types.UID]bool, len(a.workers)+len(a.stopping)+len(a.orphans))
	for uid := range a.workers {
		active[uid] = true
	}
	for uid := range a.stopping {
		active[uid] = true
	}
	for uid := range a.orphans {
		active[uid] = true
	}
	return active
}

// removeOldPodLogs is the log half of the kubelet's container GC: the log
// directories of pods neither the agent nor the runtime has any more, left
// when a removal failed or the agent was down. A pod's logs normally go
// with it (runtime.Manager.RemovePod); this catches the rest, once a
// containerGCPeriod and only once every source has delivered.
func (a *agent) removeOldPodLogs(ctx context.Context) {
	if !a.mux.AllSourcesReady() {
		return
	}
	active := a.activeUIDs()
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	removed, err := a.mgr.CleanupPodLogs(lctx, func(uid types.UID) bool { return active[uid] })
	if err != nil {
		a.log.Error(err, "removing the logs of removed pods")
	}
	if len(removed) > 0 {
		a.log.Info("removed the logs of removed pods", "uids", removed)
	}
}

// killOrphans starts killing, in the background, every pod of this node's
// in the runtime that has no worker and is not being stopped.
func (a *agent) killOrphans(ctx context.Context) {
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sandboxes, err := a.criClient.ListPodSandbox(lctx, &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{nodeLabel: a.cfg.hostname}})
	if err != nil {
		a.log.Error(err, "listing pods for orphan clean-up")
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range sandboxes {
		li := kc.ReadLabels(s.Labels, nil)
		uid := li.PodUID
		if uid == "" || a.workers[uid] != nil || a.stopping[uid] != nil || a.orphans[uid] {
			continue
		}
		a.orphans[uid] = true
		a.orphanWG.Add(1)
		go func() {
			defer a.orphanWG.Done()
			a.killOrphan(ctx, uid, li.PodName, li.PodNamespace)
			a.mu.Lock()
			delete(a.orphans, uid)
			a.mu.Unlock()
		}()
	}
}

// killOrphan kills a pod only the runtime knows, with the grace periods
// recorded on its containers, and removes it and its cgroup.
func (a *agent) killOrphan(ctx context.Context, uid types.UID, name, namespace string) {
	log := a.log.WithValues("pod", namespace+"/"+name, "uid", uid)
	log.Info("killing orphaned pod: no source has it")
	if err := killAndRemove(ctx, a.mgr, nil, uid, name, namespace); err != nil {
		log.Error(err, "killing orphaned pod") // tried again at the next housekeeping
		return
	}
	a.cache.Delete(uid)
	log.Info("orphaned pod killed and removed")
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

// waitWorkers waits for every worker, stopping ones included, to finish
// (after ctx ended).
func (a *agent) waitWorkers() {
	a.mu.Lock()
	ws := make([]*podWorker, 0, len(a.workers)+len(a.stopping))
	for _, w := range a.workers {
		ws = append(ws, w)
	}
	for _, w := range a.stopping {
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
