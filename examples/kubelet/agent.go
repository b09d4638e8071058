package main

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	"github.com/go-logr/logr"
	"github.com/nodekit-dev/nodekit/pleg"
	"github.com/nodekit-dev/nodekit/prober"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/statuscache"
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

	mu      sync.Mutex
	workers map[types.UID]*podWorker
	byFile  map[string]*podWorker
}

// syncSources reads the manifests and starts, replaces or stops pod
// workers. A bad manifest is logged and skipped.
func (a *agent) syncSources(ctx context.Context) {
	desired := a.readManifests()
	a.mu.Lock()
	defer a.mu.Unlock()
	for file, w := range a.byFile {
		if d, ok := desired[file]; ok && d.UID == w.pod.UID {
			continue
		}
		a.log.Info("pod removed from its source", "pod", podName(w.pod), "file", file)
		close(w.stop)
		delete(a.byFile, file)
		delete(a.workers, w.pod.UID)
	}
	for file, pod := range desired {
		if _, ok := a.byFile[file]; ok {
			continue
		}
		a.log.Info("pod added", "pod", podName(pod), "uid", pod.UID, "file", file)
		w := newPodWorker(pod, file)
		a.byFile[file] = w
		a.workers[pod.UID] = w
		a.prober.AddPod(pod)
		go a.runWorker(ctx, w)
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

// readManifests decodes every *.yaml, *.yml and *.json file (dotfiles
// ignored) into a pod with the kubelet's static-pod defaults. Until package
// podsource exists this is a small stand-in for its file source.
func (a *agent) readManifests() map[string]*v1.Pod {
	entries, err := os.ReadDir(a.cfg.manifestPath)
	if err != nil {
		a.log.Error(err, "reading manifest directory", "path", a.cfg.manifestPath)
		return nil
	}
	pods := map[string]*v1.Pod{}
	for _, e := range entries {
		name := e.Name()
		ext := filepath.Ext(name)
		if e.IsDir() || strings.HasPrefix(name, ".") || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
			continue
		}
		file := filepath.Join(a.cfg.manifestPath, name)
		pod, err := a.decode(file)
		if err != nil {
			a.log.Error(err, "bad manifest; skipped", "file", file)
			continue
		}
		pods[file] = pod
	}
	return pods
}

func (a *agent) decode(file string) (*v1.Pod, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pod := &v1.Pod{}
	if err := yaml.UnmarshalStrict(data, pod); err != nil {
		return nil, err
	}
	if pod.Kind != "Pod" {
		return nil, fmt.Errorf("kind: Unsupported value: %q: want Pod", pod.Kind)
	}
	if pod.Name == "" {
		return nil, fmt.Errorf("metadata.name: Required value")
	}
	for i := range pod.Spec.Containers {
		if err := runtime.ValidateContainer(&pod.Spec.Containers[i]); err != nil {
			return nil, fmt.Errorf("spec.containers[%d]: %w", i, err)
		}
	}
	if pod.Namespace == "" {
		pod.Namespace = "default"
	}
	sum := md5.Sum(append([]byte(a.cfg.hostname+"\n"+file+"\n"), data...))
	pod.UID = types.UID(hex.EncodeToString(sum[:]))
	pod.Name = pod.Name + "-" + a.cfg.hostname
	pod.Spec.NodeName = a.cfg.hostname
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations["kubernetes.io/config.source"] = "file"
	pod.Annotations["kubernetes.io/config.hash"] = string(pod.UID)
	if pod.Spec.RestartPolicy == "" {
		pod.Spec.RestartPolicy = v1.RestartPolicyAlways
	}
	return pod, nil
}

func podName(p *v1.Pod) string { return p.Namespace + "/" + p.Name }
