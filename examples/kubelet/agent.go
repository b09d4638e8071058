package main

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/nodekit-dev/nodekit/runtime"
)

type agent struct {
	cfg   config
	log   *slog.Logger
	mgr   *runtime.Manager
	known map[string]*trackedPod // by manifest file
}

type trackedPod struct {
	pod     *v1.Pod
	summary string
}

// syncAll reads the manifests, syncs every pod, and kills pods whose
// manifest went away. A bad manifest is logged and skipped.
func (a *agent) syncAll(ctx context.Context) {
	desired := a.readManifests()
	for file, tp := range a.known {
		if d, ok := desired[file]; ok && d.UID == tp.pod.UID {
			continue
		}
		a.log.Info("pod removed from its source; killing", "pod", podName(tp.pod), "file", file)
		if err := a.kill(ctx, tp.pod); err != nil {
			a.log.Error("killing pod", "pod", podName(tp.pod), "error", err)
			continue
		}
		delete(a.known, file)
	}
	files := make([]string, 0, len(desired))
	for f := range desired {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, file := range files {
		pod := desired[file]
		tp := a.known[file]
		if tp == nil {
			tp = &trackedPod{pod: pod}
			a.known[file] = tp
			a.log.Info("pod added", "pod", podName(pod), "uid", pod.UID, "file", file)
		}
		a.syncPod(ctx, tp)
	}
}

func (a *agent) syncPod(ctx context.Context, tp *trackedPod) {
	pod := tp.pod
	status, err := a.mgr.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		a.log.Error("reading pod status", "pod", podName(pod), "error", err)
		return
	}
	res := a.mgr.SyncPod(ctx, pod, status, runtime.SyncOptions{})
	for _, s := range res.Steps {
		if s.Err != nil && s.Reason() != "CrashLoopBackOff" {
			a.log.Warn("sync step failed", "pod", podName(pod), "action", s.Action, "target", s.Target, "reason", s.Reason(), "message", s.Message)
		}
	}
	if status, err = a.mgr.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace); err != nil {
		return
	}
	if sum := summarize(pod, status); sum != tp.summary {
		tp.summary = sum
		a.log.Info("pod status", "pod", podName(pod), "containers", sum)
	}
}

func (a *agent) kill(ctx context.Context, pod *v1.Pod) error {
	status, err := a.mgr.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return err
	}
	if err := a.mgr.KillPod(ctx, pod, runtime.PodFromStatus(status), nil); err != nil {
		return err
	}
	return a.mgr.RemovePod(ctx, pod.UID)
}

// summarize lists each container's newest state, e.g. "web=running restarts=0".
func summarize(pod *v1.Pod, st *kc.PodStatus) string {
	var parts []string
	for _, c := range append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		cs := st.FindContainerStatusByName(c.Name)
		switch {
		case cs == nil:
			parts = append(parts, c.Name+"=waiting")
		case cs.State == kc.ContainerStateExited:
			parts = append(parts, fmt.Sprintf("%s=exited(%d,%s) restarts=%d", c.Name, cs.ExitCode, cs.Reason, cs.RestartCount))
		default:
			parts = append(parts, fmt.Sprintf("%s=%s restarts=%d", c.Name, cs.State, cs.RestartCount))
		}
	}
	return strings.Join(parts, " ")
}

// readManifests decodes every *.yaml, *.yml and *.json file (dotfiles
// ignored) into a pod with the kubelet's static-pod defaults. Until package
// podsource exists this is a small stand-in for its file source.
func (a *agent) readManifests() map[string]*v1.Pod {
	entries, err := os.ReadDir(a.cfg.manifestPath)
	if err != nil {
		a.log.Error("reading manifest directory", "path", a.cfg.manifestPath, "error", err)
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
			a.log.Error("bad manifest; skipped", "file", file, "error", err)
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
