//go:build integration

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/runtime"
)

// node is what the invariants read: the API server's side and the host's.
type node struct {
	client     kubernetes.Interface
	runtime    *runtime.Client
	run, name  string
	rootDir    string
	podLogsDir string
	cgroupRoot string
	wantIP     string
}

// snapshot is one reading of both sides.
type snapshot struct {
	pods       []v1.Pod
	mirrors    []v1.Pod
	sandboxes  []*runtimeapi.PodSandbox
	containers []*runtimeapi.Container
	node       *v1.Node
}

func (n *node) read(ctx context.Context) (*snapshot, error) {
	var s snapshot
	list, err := n.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "soak=" + n.run})
	if err != nil {
		return nil, err
	}
	for _, p := range list.Items {
		if _, mirror := p.Annotations[v1.MirrorPodAnnotationKey]; mirror {
			s.mirrors = append(s.mirrors, p)
		} else {
			s.pods = append(s.pods, p)
		}
	}
	if s.node, err = n.client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{}); err != nil {
		return nil, err
	}
	if s.sandboxes, err = n.runtime.ListPodSandbox(ctx, nil); err != nil {
		return nil, err
	}
	s.containers, err = n.runtime.ListContainers(ctx, nil)
	return &s, err
}

// problems lists every invariant the snapshot breaks; none once the node
// has settled.
func (n *node) problems(s *snapshot) []string {
	api := map[types.UID]bool{}
	var out []string
	for _, p := range s.pods {
		api[p.UID] = true
		out = append(out, podProblems(p, s)...)
	}
	for _, m := range s.mirrors {
		out = append(out, fmt.Sprintf("mirror pod %s: still in the API after its static pod was removed (deletionTimestamp %v)",
			m.Name, m.DeletionTimestamp))
	}
	out = append(out, runtimeProblems(s, api)...)
	out = append(out, n.hostProblems(api)...)
	return append(out, n.nodeProblems(s.node)...)
}

// podProblems: the pod's API status says what runs (phase, container ID,
// state, restartCount, ready), and nothing runs twice.
func podProblems(p v1.Pod, s *snapshot) []string {
	kind := p.Labels["kind"]
	bad := func(f string, args ...any) string {
		return fmt.Sprintf("pod %s (%s): ", p.Name, kind) + fmt.Sprintf(f, args...)
	}
	if p.DeletionTimestamp != nil {
		return []string{bad("still being deleted, since %s", p.DeletionTimestamp)}
	}
	want := map[string]v1.PodPhase{kindJobOK: v1.PodSucceeded, kindJobFail: v1.PodFailed}[kind]
	if want == "" {
		want = v1.PodRunning
	}
	if kind == kindJobOK && unknownExit(p) {
		// Its container ended while containerd was down (the restart
		// fault): containerd 2 cannot tell the exit code after it comes
		// back and reports its unknown exit code, 255, as the kubelet
		// would see it too; under restartPolicy Never that is Failed.
		want = v1.PodFailed
	}
	var out []string
	if p.Status.Phase != want {
		out = append(out, bad("phase %s, want %s", p.Status.Phase, want))
	}
	ready := 0
	for _, sb := range s.sandboxes {
		if sb.Metadata.Uid == string(p.UID) && sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			ready++
		}
	}
	if wantReady := map[bool]int{true: 1}[want == v1.PodRunning]; ready != wantReady {
		out = append(out, bad("%d ready sandboxes in the runtime, want %d", ready, wantReady))
	}
	if len(p.Status.ContainerStatuses) != 1 {
		return append(out, bad("%d container statuses, want 1", len(p.Status.ContainerStatuses)))
	}
	return append(out, containerProblems(p, p.Status.ContainerStatuses[0], s, bad)...)
}

func containerProblems(p v1.Pod, cs v1.ContainerStatus, s *snapshot, bad func(string, ...any) string) []string {
	var newest *runtimeapi.Container
	running := 0
	for _, c := range s.containers {
		if c.Labels[kc.LabelPodUID] != string(p.UID) || c.Metadata.Name != cs.Name {
			continue
		}
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			running++
		}
		if newest == nil || c.Metadata.Attempt > newest.Metadata.Attempt {
			newest = c
		}
	}
	if newest == nil {
		return []string{bad("no container %q in the runtime", cs.Name)}
	}
	var out []string
	if running > 1 {
		out = append(out, bad("container %q runs %d times", cs.Name, running))
	}
	if want := "containerd://" + newest.Id; cs.ContainerID != want {
		out = append(out, bad("containerID %s, the runtime's newest is %s", cs.ContainerID, want))
	}
	if isRunning := newest.State == runtimeapi.ContainerState_CONTAINER_RUNNING; (cs.State.Running != nil) != isRunning {
		out = append(out, bad("API state %s, runtime state %s", stateName(cs.State), newest.State))
	}
	if cs.RestartCount != int32(newest.Metadata.Attempt) {
		out = append(out, bad("restartCount %d, the runtime's newest container is attempt %d", cs.RestartCount, newest.Metadata.Attempt))
	}
	switch kind := p.Labels["kind"]; {
	case kind == kindUnready && cs.Ready:
		out = append(out, bad("ready, but its readiness probe fails"))
	case kind != kindUnready && kind != kindLiveFail && cs.Ready != (cs.State.Running != nil):
		out = append(out, bad("ready=%v while running=%v", cs.Ready, cs.State.Running != nil))
	}
	return out
}

func stateName(s v1.ContainerState) string {
	switch {
	case s.Running != nil:
		return "running"
	case s.Terminated != nil:
		return "terminated " + s.Terminated.Reason
	case s.Waiting != nil:
		return "waiting " + s.Waiting.Reason
	}
	return "none"
}

// runtimeProblems: nothing of a pod the API no longer has is left in the
// runtime.
func runtimeProblems(s *snapshot, api map[types.UID]bool) []string {
	var out []string
	for _, sb := range s.sandboxes {
		if !api[types.UID(sb.Metadata.Uid)] {
			out = append(out, fmt.Sprintf("sandbox of gone pod %s/%s (uid %s, %s) left in the runtime",
				sb.Metadata.Namespace, sb.Metadata.Name, sb.Metadata.Uid, sb.State))
		}
	}
	for _, c := range s.containers {
		if uid := c.Labels[kc.LabelPodUID]; !api[types.UID(uid)] {
			out = append(out, fmt.Sprintf("container %s of gone pod %s (uid %s, %s) left in the runtime",
				c.Metadata.Name, c.Labels[kc.LabelPodName], uid, c.State))
		}
	}
	return out
}

// hostProblems: no pod directory, volume, mount, log directory or pod
// cgroup of a pod the API no longer has.
func (n *node) hostProblems(api map[types.UID]bool) []string {
	var out []string
	gone := func(what, path string, uid string) {
		if !api[types.UID(uid)] {
			out = append(out, fmt.Sprintf("%s of gone pod %s left: %s", what, uid, path))
		}
	}
	dirs, _ := os.ReadDir(filepath.Join(n.rootDir, "pods"))
	for _, d := range dirs {
		gone("pod directory", filepath.Join(n.rootDir, "pods", d.Name()), d.Name())
	}
	logs, _ := os.ReadDir(n.podLogsDir)
	for _, d := range logs {
		gone("log directory", filepath.Join(n.podLogsDir, d.Name()), d.Name()[strings.LastIndexByte(d.Name(), '_')+1:])
	}
	for _, m := range mountsUnder(filepath.Join(n.rootDir, "pods") + "/") {
		gone("mount", m, strings.SplitN(strings.TrimPrefix(m, filepath.Join(n.rootDir, "pods")+"/"), "/", 2)[0])
	}
	for _, pattern := range []string{"/kubepods/pod*", "/kubepods/*/pod*"} {
		cgs, _ := filepath.Glob("/sys/fs/cgroup/*" + n.cgroupRoot + pattern)
		for _, cg := range cgs {
			gone("pod cgroup", cg, strings.TrimPrefix(filepath.Base(cg), "pod"))
		}
	}
	sort.Strings(out)
	return out
}

// mountsUnder lists the mount points under prefix.
func mountsUnder(prefix string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 4 && strings.HasPrefix(fields[4], prefix) {
			out = append(out, fields[4])
		}
	}
	return out
}

func (n *node) nodeProblems(node *v1.Node) []string {
	var out []string
	ready := false
	for _, c := range node.Status.Conditions {
		ready = ready || (c.Type == v1.NodeReady && c.Status == v1.ConditionTrue)
	}
	if !ready {
		out = append(out, "node not Ready")
	}
	var ips []string
	for _, a := range node.Status.Addresses {
		if a.Type == v1.NodeInternalIP {
			ips = append(ips, a.Address)
		}
	}
	if len(ips) != 1 || ips[0] != n.wantIP {
		out = append(out, fmt.Sprintf("node InternalIP %v, want [%s]", ips, n.wantIP))
	}
	return out
}

// afterDeletion watches the soak's pods: once the API server has deleted a
// pod, nothing may write it again: no object of its name may reappear (the
// agent creates no pod but mirror pods). A mirror pod may be created anew
// while its static pod exists, never once the static pod is gone (but for
// a create in flight then, which the agent must delete).
type afterDeletion struct {
	mu           sync.Mutex
	deleted      map[string]types.UID
	staticGoneAt time.Time // when the static pod's manifest was removed
	violations   []string
	events       int
}

// staticGone records that the static pod's manifest was removed now.
func (w *afterDeletion) staticGone() {
	w.mu.Lock()
	w.staticGoneAt = time.Now()
	w.mu.Unlock()
}

func (w *afterDeletion) handlers() cache.ResourceEventHandlerFuncs {
	seen := func(obj any) {
		p, ok := obj.(*v1.Pod)
		if !ok {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.events++
		_, mirror := p.Annotations[v1.MirrorPodAnnotationKey]
		// A mirror pod (created anew) while its static pod exists, or by a
		// create already in flight when the manifest went: it lands a moment
		// after, in that second or the next (creation timestamps are whole
		// seconds), and the agent deletes it (the settle check requires it).
		if mirror && (w.staticGoneAt.IsZero() || p.CreationTimestamp.Time.Before(w.staticGoneAt.Truncate(time.Second).Add(2*time.Second))) {
			return
		}
		if uid, ok := w.deleted[p.Name]; ok {
			w.violations = append(w.violations, fmt.Sprintf("pod %s (uid %s) written after pod %s (uid %s) was deleted",
				p.Name, p.UID, p.Name, uid))
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, obj any) { seen(obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if p, ok := obj.(*v1.Pod); ok {
				w.mu.Lock()
				w.deleted[p.Name] = p.UID
				w.mu.Unlock()
			}
		},
	}
}

// unknownExitCode is containerd's exit code for a task whose exit it did
// not see.
const unknownExitCode = 255

func unknownExit(p v1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.ExitCode == unknownExitCode {
			return true
		}
	}
	return false
}
