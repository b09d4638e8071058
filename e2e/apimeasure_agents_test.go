//go:build integration

package e2e

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/cgroupmgr"
	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/testenv"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/nodestatus"
	"github.com/nodekit-dev/nodekit/runtime"
)

// apiEnv is what the agents measured one after the other share: the test
// containerd, the test apiserver's node, and an admin client.
type apiEnv struct {
	t      *testing.T
	client kubernetes.Interface // admin, with no client-side rate limit worth the name
	rt     *runtime.Client
	cd     testenv.Containerd
	node   string
	run    string
	token  string // the admin's bearer token, for the agents' /metrics
	scrape *http.Client
}

func newAPIEnv(t *testing.T) *apiEnv {
	cd := testenv.NeedContainerd(t)
	api := testenv.NeedAPIServer(t)
	cfg := rest.CopyConfig(api.AdminConfig)
	cfg.QPS, cfg.Burst = 1000, 1000 // the creates' clock starts before the call: no waiting in client-go
	dir := os.Getenv("NODEKIT_APISERVER_DIR")
	if dir == "" {
		dir = "/tmp/nodekit-apiserver"
	}
	token, err := os.ReadFile(filepath.Join(dir, "admin.token"))
	require.NoError(t, err, "the admin's token, which hack/apiserver-up.sh writes")
	// The agents' serving certificates are self-signed.
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, IdleConnTimeout: 5 * time.Second} //nolint:gosec
	t.Cleanup(tr.CloseIdleConnections)
	return &apiEnv{t: t, client: testenv.Client(t, cfg), rt: cd.Dial(t), cd: cd, node: api.Node, run: rand.String(6),
		token: strings.TrimSpace(string(token)), scrape: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// measuredAgent is one node agent under measurement: "nodekit" or "kubelet".
type measuredAgent struct {
	kind       string
	label      string // the value of its pods' label apimeasure
	proc       *agentProcess
	metricsURL string
	cgroupRoot string
	rootDir    string
}

// startAgent starts kind for the node with the settings both agents get
// (a KubeletConfiguration of podLogsDir and maxPods, serving and auth flags
// as conformance.sh gives the kubelet, a private root, cgroup root and pod
// log directory, default API QPS) and waits until its Node is Ready.
func (e *apiEnv) startAgent(kind string, maxPods int) *measuredAgent {
	t := e.t
	dir := t.TempDir()
	root, logs := filepath.Join(dir, "root"), filepath.Join(dir, "pod-logs")
	for _, d := range []string{root, logs, filepath.Join(dir, "manifests")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	ports := freePorts(t, 2)
	a := &measuredAgent{kind: kind, label: e.run + "-" + kind, metricsURL: fmt.Sprintf("https://127.0.0.1:%d/metrics", ports[0]),
		cgroupRoot: testenv.CgroupRoot + "/apimeasure-" + kind + "-" + e.run, rootDir: root}
	makeCgroupRoot(t, a.cgroupRoot)
	config := filepath.Join(dir, "kubelet-config.yaml")
	conf := fmt.Sprintf("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\npodLogsDir: %s\nmaxPods: %d\n", logs, maxPods)
	if cgroupmgr.HostMode() != cgroupmgr.ModeV2 {
		conf += "failCgroupV1: false\n" // both refuse cgroup v1 hosts by default (the kubelet since v1.35)
	}
	require.NoError(t, os.WriteFile(config, []byte(conf), 0o644))
	common := []string{"--config=" + config, "--kubeconfig=" + os.Getenv("NODEKIT_NODE_KUBECONFIG"),
		"--container-runtime-endpoint=" + e.cd.Endpoint, "--cgroup-driver=cgroupfs", "--cgroup-root=" + a.cgroupRoot,
		"--root-dir=" + root, "--cert-dir=" + filepath.Join(root, "pki"), "--client-ca-file=" + os.Getenv("NODEKIT_CLIENT_CA"),
		"--anonymous-auth=false", "--authentication-token-webhook", "--authorization-mode=Webhook", "--read-only-port=0",
		"--address=127.0.0.1", fmt.Sprintf("--port=%d", ports[0]), "--healthz-bind-address=127.0.0.1",
		fmt.Sprintf("--healthz-port=%d", ports[1]), "--hostname-override=" + e.node}
	bin, extra := e.agentBin(kind, dir)
	// NODEKIT_MEASURE_LOG_DIR keeps the agents' logs after the test.
	logPath := filepath.Join(cmp.Or(os.Getenv("NODEKIT_MEASURE_LOG_DIR"), dir), kind+".log")
	a.proc = &agentProcess{t: t, bin: bin, logPath: logPath, healthz: ports[1], foreign: kind == "kubelet",
		args: func(nodeIP string) []string { return append(append(common, "--node-ip="+nodeIP), extra...) }}
	e.forgetNode()
	a.proc.start("127.0.0.1")
	e.waitNodeReady(a)
	return a
}

// agentBin is kind's binary and the flags only it takes.
func (e *apiEnv) agentBin(kind, dir string) (string, []string) {
	if kind == "kubelet" {
		return os.Getenv("NODEKIT_KUBELET_BIN"), []string{"--fail-swap-on=false",
			"--volume-plugin-dir=" + filepath.Join(dir, "root", "volume-plugins")}
	}
	// NODEKIT_AGENT_BIN measures an agent built beforehand, as TestMeasureAgent.
	bin := os.Getenv("NODEKIT_AGENT_BIN")
	if bin == "" {
		bin = buildAgent(e.t, dir)
	}
	return bin, []string{"--runtime=remote", "--pod-manifest-path=" + filepath.Join(dir, "manifests")}
}

// waitNodeReady waits for the agent's Node to be Ready. The kubelet refuses
// a loopback --node-ip and registers no address: the admin gives the Node
// 127.0.0.1, as hack/conformance.sh does.
func (e *apiEnv) waitNodeReady(a *measuredAgent) {
	ctx := context.Background()
	poll.Eventually(e.t, func() bool {
		require.True(e.t, a.proc.alive(), "%s exited:\n%s", a.kind, a.proc.logTail(40))
		n, err := e.client.CoreV1().Nodes().Get(ctx, e.node, metav1.GetOptions{})
		if err != nil {
			return false
		}
		if len(n.Status.Addresses) == 0 {
			_, _ = e.client.CoreV1().Nodes().PatchStatus(ctx, e.node,
				[]byte(`{"status":{"addresses":[{"type":"InternalIP","address":"127.0.0.1"}]}}`))
			return false
		}
		return len(notReady(n)) == 0
	}, 3*time.Minute, 500*time.Millisecond, "%s: Node %s Ready\n%s", a.kind, e.node, func() string { return a.proc.logTail(30) })
}

// forgetNode deletes the Node and its Lease.
func (e *apiEnv) forgetNode() {
	ctx := context.Background()
	_ = e.client.CoreV1().Nodes().Delete(ctx, e.node, metav1.DeleteOptions{})
	_ = e.client.CoordinationV1().Leases(nodestatus.LeaseNamespace).Delete(ctx, e.node, metav1.DeleteOptions{})
}

// teardown force-deletes the agent's pods, waits for the runtime to have
// no sandbox left, stops the agent, removes what it left in the runtime,
// deletes the Node and its Lease and removes the agent's cgroups; it fails
// the test if any pod or sandbox stays.
func (e *apiEnv) teardown(a *measuredAgent) {
	ctx := context.Background()
	pods := e.client.CoreV1().Pods("default")
	require.NoError(e.t, pods.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)},
		metav1.ListOptions{LabelSelector: "apimeasure=" + a.label}))
	if a.proc.alive() {
		_ = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			sbs, err := e.rt.ListPodSandbox(ctx, nil)
			return err == nil && len(sbs) == 0, nil
		})
	}
	a.proc.stop(syscall.SIGTERM)
	sbs, err := e.rt.ListPodSandbox(ctx, nil)
	require.NoError(e.t, err)
	for _, sb := range sbs {
		require.NoError(e.t, e.rt.StopPodSandbox(ctx, sb.Id))
		require.NoError(e.t, e.rt.RemovePodSandbox(ctx, sb.Id))
	}
	ctrs, err := e.rt.ListContainers(ctx, nil)
	require.NoError(e.t, err)
	for _, c := range ctrs {
		require.NoError(e.t, e.rt.StopContainer(ctx, c.Id, 0))
		require.NoError(e.t, e.rt.RemoveContainer(ctx, c.Id))
	}
	if len(sbs)+len(ctrs) > 0 {
		e.t.Logf("MEASURE %s: removed %d pod sandboxes and then %d containers it left in the runtime after its pods were "+
			"force-deleted and it was stopped", a.kind, len(sbs), len(ctrs))
	}
	e.forgetNode()
	removeCgroupTree(a.cgroupRoot)
	unmountUnder(e.t, a.rootDir)
	left, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "apimeasure=" + a.label})
	require.NoError(e.t, err)
	require.Empty(e.t, left.Items, "%s: pods left in the API", a.kind)
	ctrs, err = e.rt.ListContainers(ctx, nil)
	require.NoError(e.t, err)
	require.Empty(e.t, ctrs, "%s: containers left in the runtime", a.kind)
}

// unmountUnder unmounts dir and every mount below it, the deepest first:
// the kubelet bind-mounts its root directory onto itself (to make it
// rshared) and leaves it mounted when it stops.
func unmountUnder(t *testing.T, dir string) {
	var mounts []string
	for _, m := range mountsUnder(dir) {
		if m == dir || strings.HasPrefix(m, dir+"/") {
			mounts = append(mounts, m)
		}
	}
	for i := len(mounts) - 1; i >= 0; i-- {
		require.NoError(t, syscall.Unmount(mounts[i], syscall.MNT_DETACH), "unmounting %s", mounts[i])
	}
}

// makeCgroupRoot creates root in every cgroup hierarchy, as
// hack/conformance.sh does for the kubelet.
func makeCgroupRoot(t *testing.T, root string) {
	hs, _ := filepath.Glob("/sys/fs/cgroup/*")
	for _, h := range hs {
		if fi, err := os.Stat(h); err == nil && fi.IsDir() {
			require.NoError(t, os.MkdirAll(filepath.Join(h, root), 0o755))
		}
	}
}

// removeCgroupTree removes root and every cgroup below it, deepest first,
// from every hierarchy (they are empty once the runtime has no containers).
func removeCgroupTree(root string) {
	tops, _ := filepath.Glob("/sys/fs/cgroup/*" + root)
	var dirs []string
	for _, top := range tops {
		_ = filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
	}
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	for _, d := range dirs {
		_ = os.Remove(d)
	}
}

// metrics is the agent's /metrics, fetched as the admin.
func (e *apiEnv) metrics(a *measuredAgent) string {
	req, err := http.NewRequest(http.MethodGet, a.metricsURL, nil)
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := e.scrape.Do(req)
	require.NoError(e.t, err, "%s: GET /metrics", a.kind)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, resp.StatusCode, "%s: GET /metrics: %s", a.kind, b)
	return string(b)
}

// metricSum is the sum of a counter's samples over all its labels; false
// if the exposition has none.
func metricSum(text, name string) (float64, bool) {
	sum, found := 0.0, false
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum, found = sum+v, true
		}
	}
	return sum, found
}

// histogramBuckets is a histogram's cumulative counts by upper bound
// (summed over any other labels).
func histogramBuckets(text, name string) map[float64]float64 {
	out := map[float64]float64{}
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(line, name+"_bucket{")
		_, le, ok2 := strings.Cut(rest, `le="`)
		le, _, ok3 := strings.Cut(le, `"`)
		if !ok || !ok2 || !ok3 {
			continue
		}
		bound, err1 := strconv.ParseFloat(le, 64)
		f := strings.Fields(line)
		v, err2 := strconv.ParseFloat(f[len(f)-1], 64)
		if err1 == nil && err2 == nil {
			out[bound] += v
		}
	}
	return out
}

// bucketQuantile is the q-quantile of the observations between two
// readings of a histogram: the upper bound of the first bucket whose
// cumulative count reaches q of them; false with no observations.
func bucketQuantile(before, after map[float64]float64, q float64) (float64, bool) {
	total := after[math.Inf(1)] - before[math.Inf(1)]
	if total <= 0 {
		return 0, false
	}
	bounds := make([]float64, 0, len(after))
	for b := range after {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	for _, b := range bounds {
		if after[b]-before[b] >= q*total {
			return b, true
		}
	}
	return math.Inf(1), true
}

// podTimes is what a watch of the agent's pods saw, and when: by pod name.
type podTimes struct {
	mu           sync.Mutex
	created      map[string]time.Time // just before the Create call
	deleteCalled map[string]time.Time // just before the Delete call
	running      map[string]time.Time // the first status with the container running
	ready        map[string]time.Time // the first status Running and Ready
	deleted      map[string]time.Time // the watch's DELETED event
	failed       map[string]time.Time // the first status Failed (the agent rejected it, say OutOfpods)
	uid          map[string]types.UID
}

// watchPods watches the agent's pods (an informer on their label) until
// the returned stop.
func (e *apiEnv) watchPods(a *measuredAgent) (*podTimes, func()) {
	w := &podTimes{created: map[string]time.Time{}, deleteCalled: map[string]time.Time{}, running: map[string]time.Time{},
		ready: map[string]time.Time{}, deleted: map[string]time.Time{}, failed: map[string]time.Time{}, uid: map[string]types.UID{}}
	factory := informers.NewSharedInformerFactoryWithOptions(e.client, 0, informers.WithNamespace("default"),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "apimeasure=" + a.label }))
	inf := factory.Core().V1().Pods().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: w.seen, UpdateFunc: func(_, obj any) { w.seen(obj) },
		DeleteFunc: w.gone})
	require.NoError(e.t, err)
	done := make(chan struct{})
	factory.Start(done)
	require.True(e.t, cache.WaitForCacheSync(done, inf.HasSynced))
	return w, func() { close(done); factory.Shutdown() }
}

func (w *podTimes) seen(obj any) {
	p, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.uid[p.Name] = p.UID
	if _, ok := w.running[p.Name]; !ok && len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Running != nil {
		w.running[p.Name] = now
	}
	if _, ok := w.ready[p.Name]; !ok && p.Status.Phase == v1.PodRunning && len(notReadyPod(p)) == 0 {
		w.ready[p.Name] = now
	}
	if _, ok := w.failed[p.Name]; !ok && p.Status.Phase == v1.PodFailed {
		w.failed[p.Name] = now
	}
}

func (w *podTimes) gone(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if p, ok := obj.(*v1.Pod); ok {
		w.mu.Lock()
		w.deleted[p.Name] = time.Now()
		w.mu.Unlock()
	}
}

func notReadyPod(p *v1.Pod) []string {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady && c.Status == v1.ConditionTrue {
			return nil
		}
	}
	return []string{p.Name + " not ready"}
}

// mark records now as name's time in m.
func (w *podTimes) mark(m map[string]time.Time, name string) {
	w.mu.Lock()
	m[name] = time.Now()
	w.mu.Unlock()
}

// missing counts the names with no time in m, nor in the maps of also.
func (w *podTimes) missing(names []string, m map[string]time.Time, also ...map[string]time.Time) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, name := range names {
		_, ok := m[name]
		for _, o := range also {
			_, in := o[name]
			ok = ok || in
		}
		if !ok {
			n++
		}
	}
	return n
}

// failedCount is how many of names the watch saw Failed before their
// deletion was asked (rejected by the agent, say OutOfpods): a pod deleted
// while it starts may end Failed too, and is not counted.
func (w *podTimes) failedCount(names []string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, name := range names {
		failed, ok := w.failed[name]
		if del, asked := w.deleteCalled[name]; ok && (!asked || failed.Before(del)) {
			n++
		}
	}
	return n
}

// lags are the sorted durations from[name] → to[name] of the names that
// have both, and the latest time in to.
func (w *podTimes) lags(names []string, from, to map[string]time.Time) ([]time.Duration, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []time.Duration
	var last time.Time
	for _, name := range names {
		f, ok1 := from[name]
		at, ok2 := to[name]
		if ok1 && ok2 {
			out = append(out, at.Sub(f))
			if at.After(last) {
				last = at
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, last
}

// apiPod is one of the agent's pods: host network, the test image
// sleeping, no service account token, bound to the node.
func (a *measuredAgent) apiPod(node, name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"apimeasure": a.label}},
		Spec: v1.PodSpec{NodeName: node, HostNetwork: true, AutomountServiceAccountToken: ptr.To(false), TerminationGracePeriodSeconds: ptr.To[int64](2),
			Containers: []v1.Container{{Name: "c", Image: testenv.TestImage, ImagePullPolicy: v1.PullNever, Args: []string{"sleep"}}}}}
}

// servePod is the test image's HTTP server on 127.0.0.1:port with a
// readiness probe every second (its host given: the kubelet's Node has
// its address only from the admin).
func (a *measuredAgent) servePod(node, name string, port int) *v1.Pod {
	p := a.apiPod(node, name)
	c := &p.Spec.Containers[0]
	c.Args, c.Env = []string{"serve"}, []v1.EnvVar{{Name: "PORT", Value: strconv.Itoa(port)}}
	c.ReadinessProbe = &v1.Probe{PeriodSeconds: 1, ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{
		Host: "127.0.0.1", Path: "/readyz", Port: intstr.FromInt(port)}}}
	return p
}

// inParallel runs do for every item, 10 at a time, and fails the test on
// the first error.
func inParallel[T any](t *testing.T, items []T, do func(T) error) {
	work := make(chan T)
	errs := make(chan error, len(items))
	var wg sync.WaitGroup
	for range min(10, len(items)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range work {
				if err := do(it); err != nil {
					errs <- err
				}
			}
		}()
	}
	for _, it := range items {
		work <- it
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// createAndDelete creates pods and gracefully deletes the pods named del,
// all at once, recording when each call began.
func (e *apiEnv) createAndDelete(w *podTimes, create []*v1.Pod, del []string) {
	ops := make([]func() error, 0, len(create)+len(del))
	pods := e.client.CoreV1().Pods("default")
	for _, p := range create {
		ops = append(ops, func() error {
			w.mark(w.created, p.Name)
			_, err := pods.Create(context.Background(), p, metav1.CreateOptions{})
			return err
		})
	}
	for _, name := range del {
		ops = append(ops, func() error {
			w.mark(w.deleteCalled, name)
			return pods.Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	inParallel(e.t, ops, func(op func() error) error { return op() })
}

// criStarts polls the runtime for its running containers' StartedAt, by
// pod UID (label io.kubernetes.pod.uid), until the returned stop.
func (e *apiEnv) criStarts() (func(types.UID) (time.Time, bool), func()) {
	var mu sync.Mutex
	started := map[types.UID]time.Time{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	running := &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}
	go func() {
		defer close(done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			ctrs, _ := e.rt.ListContainers(ctx, running)
			for _, c := range ctrs {
				uid := types.UID(c.Labels[kc.LabelPodUID])
				mu.Lock()
				_, known := started[uid]
				mu.Unlock()
				if known {
					continue
				}
				if st, err := e.rt.ContainerStatus(ctx, c.Id, false); err == nil && st.Status.StartedAt > 0 {
					mu.Lock()
					started[uid] = time.Unix(0, st.Status.StartedAt)
					mu.Unlock()
				}
			}
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
	}()
	get := func(uid types.UID) (time.Time, bool) {
		mu.Lock()
		defer mu.Unlock()
		at, ok := started[uid]
		return at, ok
	}
	return get, func() { cancel(); <-done }
}
