//go:build integration

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/cgroupmgr"
	"github.com/nodekit-dev/nodekit/internal/testenv"
	"github.com/nodekit-dev/nodekit/nodestatus"
)

// soakDuration is NODEKIT_SOAK (a Go duration), 150s by default: long
// enough for every fault once.
func soakDuration(t *testing.T) time.Duration {
	d := 150 * time.Second
	if s := os.Getenv("NODEKIT_SOAK"); s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil || d < 90*time.Second {
			t.Fatalf("NODEKIT_SOAK: invalid value %q: want a Go duration of 90s or more", s)
		}
	}
	return d
}

// soakSeed is NODEKIT_SOAK_SEED, to replay a run (its log says the
// seed; the faults and the churn follow it, the timing of the real parts
// does not), else a new one.
func soakSeed(t *testing.T) uint64 {
	s := os.Getenv("NODEKIT_SOAK_SEED")
	if s == "" {
		return uint64(time.Now().UnixNano())
	}
	seed, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("NODEKIT_SOAK_SEED: invalid value %q: want an unsigned integer", s)
	}
	return seed
}

// fault is one disruption at an offset into the churn.
type fault struct {
	at   time.Duration
	name string
	do   func()
}

// TestSoak churns API pods on the reference agent (its own process, on a
// containerd of the test's own and the test apiserver) while it kills the
// agent at random moments, restarts containerd twice, stops the apiserver
// for 30 s, deletes the Node once and changes --node-ip once; then it waits
// for the node to settle and checks that nothing stayed stuck: every API
// pod's status says what runs, nothing of a deleted pod is left in the
// runtime or on the host, nothing runs twice, the Node is Ready with its
// new address, and no deleted pod was written again.
func TestSoak(t *testing.T) {
	d := soakDuration(t)
	seed := soakSeed(t)
	t.Logf("soak of %s, seed %d (NODEKIT_SOAK_SEED replays it)", d, seed)
	r := rand.New(rand.NewPCG(seed, 0))
	cd := testenv.PrivateContainerd(t, "soak")
	api := testenv.NeedAPIServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), d+20*time.Minute)
	defer cancel()
	run := fmt.Sprintf("%x", r.Uint32())
	dir := t.TempDir()
	n := &node{client: api.Admin, runtime: cd.Dial(t), run: run, name: api.Node, rootDir: filepath.Join(dir, "root"),
		podLogsDir: filepath.Join(dir, "logs"), cgroupRoot: testenv.CgroupRoot + "/soak-" + run, wantIP: "127.0.0.2"}
	manifests := filepath.Join(dir, "manifests")
	for _, d := range []string{n.rootDir, n.podLogsDir, manifests} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	agent := newAgent(t, dir, cd.Endpoint, n, manifests)
	prepareCluster(t, ctx, n)
	t.Cleanup(func() { cleanUp(t, n, agent) })

	agent.start("127.0.0.1")
	settle(t, ctx, 60*time.Second, "the node Ready", func() []string {
		s, err := n.read(ctx)
		if err != nil {
			return []string{err.Error()}
		}
		return notReady(s.node)
	})
	watch := &afterDeletion{deleted: map[string]types.UID{}}
	stopWatch := watchPods(t, n, watch)

	c := &churn{client: api.Admin, run: run, node: api.Node, target: 24, rand: rand.New(rand.NewPCG(seed, 1)),
		counts: map[string]int{}}
	churnCtx, stopChurn := context.WithCancel(ctx)
	churned := make(chan struct{})
	go func() { defer close(churned); c.loop(churnCtx) }()
	faults := schedule(t, d, r, agent, cd, n, manifests, watch)
	start := time.Now()
	for _, f := range faults {
		select {
		case <-ctx.Done():
			t.Fatal("the soak ran out of time")
		case <-time.After(time.Until(start.Add(f.at))):
		}
		t.Logf("+%s: %s", time.Since(start).Round(time.Second), f.name)
		f.do()
		require.True(t, agent.alive(), "the agent exited on its own after %s:\n%s", f.name, agent.logTail(60))
	}
	// Faults wait for each other (an outage's restart takes a while): the
	// churn goes on for at least 20s after the last.
	<-time.After(max(time.Until(start.Add(d)), 20*time.Second))
	stopChurn()
	<-churned
	t.Logf("churn over after %s: %v", time.Since(start).Round(time.Second), c.snapshot())

	settled := time.Now()
	settle(t, ctx, 5*time.Minute, "the node to settle (every invariant)", func() []string {
		s, err := n.read(ctx)
		if err != nil {
			return []string{err.Error()}
		}
		return n.problems(s)
	})
	stopWatch()
	watch.mu.Lock()
	defer watch.mu.Unlock()
	require.Empty(t, watch.violations, "deleted pods written again")
	require.True(t, agent.alive(), "the agent exited on its own:\n%s", agent.logTail(60))
	t.Logf("settled in %s; %d pod events watched, %d pods deleted; agent started %d times; faults: %s",
		time.Since(settled).Round(time.Second), watch.events, len(watch.deleted), agent.starts, faultNames(faults))
}

func newAgent(t *testing.T, dir, endpoint string, n *node, manifests string) *agentProcess {
	bin := buildAgent(t, dir)
	healthz := freePort(t)
	return &agentProcess{t: t, bin: bin, logPath: filepath.Join(dir, "agent.log"), healthz: healthz,
		args: func(nodeIP string) []string {
			return []string{"--runtime", "remote", "--container-runtime-endpoint", endpoint,
				"--kubeconfig", os.Getenv("NODEKIT_NODE_KUBECONFIG"), "--hostname-override", n.name, "--node-ip", nodeIP,
				"--pod-manifest-path", manifests, "--file-check-frequency", "1s", "--sync-frequency", "10s",
				"--root-dir", n.rootDir, "--pod-logs-dir", n.podLogsDir, "--cgroup-root", n.cgroupRoot,
				"--address", "127.0.0.1", "--port", "0", "--healthz-port", fmt.Sprint(healthz),
				"--node-status-update-frequency", "2s", "--node-lease-duration-seconds", "8"}
		}}
}

// prepareCluster removes what an earlier run left of the node and adds the
// soak's ConfigMap.
func prepareCluster(t *testing.T, ctx context.Context, n *node) {
	t.Helper()
	_ = n.client.CoreV1().Nodes().Delete(ctx, n.name, metav1.DeleteOptions{})
	_ = n.client.CoordinationV1().Leases(nodestatus.LeaseNamespace).Delete(ctx, n.name, metav1.DeleteOptions{})
	_, err := n.client.CoreV1().ConfigMaps("default").Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "soak-" + n.run},
		Data: map[string]string{"greeting": "hello"}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// schedule places the faults: agent kills at random moments, the rest at
// fixed fractions of d (one at a time: each waits for the one before).
func schedule(t *testing.T, d time.Duration, r *rand.Rand, agent *agentProcess, cd testenv.Containerd, n *node, manifests string,
	watch *afterDeletion) []fault {
	frac := func(f float64) time.Duration { return time.Duration(f * float64(d)) }
	ip := "127.0.0.1"
	static := filepath.Join(manifests, "static.yaml")
	faults := []fault{
		{frac(0.08), "static pod added", func() { writeStatic(t, static, n.run) }},
		{frac(0.12), "Node deleted", func() {
			require.NoError(t, n.client.CoreV1().Nodes().Delete(context.Background(), n.name, metav1.DeleteOptions{}))
		}},
		{frac(0.3), "containerd restarted", func() { cd.Kill(t); time.Sleep(2 * time.Second); cd.Start(t) }},
		{frac(0.45), "apiserver stopped for 30s", func() { apiserverOutage(t, 30*time.Second) }},
		{frac(0.6), "containerd restarted", func() { cd.Kill(t); time.Sleep(2 * time.Second); cd.Start(t) }},
		{frac(0.75), "--node-ip changed to 127.0.0.2", func() {
			agent.stop(syscall.SIGTERM)
			ip = n.wantIP
			agent.start(ip)
		}},
		{frac(0.85), "static pod removed", func() { watch.staticGone(); require.NoError(t, os.Remove(static)) }},
	}
	for range max(3, int(d/(45*time.Second))) {
		faults = append(faults, fault{time.Duration(float64(d) * (0.05 + 0.85*r.Float64())), "agent killed (SIGKILL)", func() {
			agent.stop(syscall.SIGKILL)
			time.Sleep(time.Duration(500+r.IntN(2500)) * time.Millisecond)
			agent.start(ip)
		}})
	}
	sort.SliceStable(faults, func(i, j int) bool { return faults[i].at < faults[j].at })
	return faults
}

func faultNames(fs []fault) string {
	count := map[string]int{}
	for _, f := range fs {
		count[f.name]++
	}
	var out []string
	for name, k := range count {
		out = append(out, fmt.Sprintf("%d× %s", k, name))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func writeStatic(t *testing.T, path, run string) {
	manifest := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: static, namespace: default, labels: {soak: %q, kind: static}}\n"+
		"spec:\n  hostNetwork: true\n  terminationGracePeriodSeconds: 5\n  containers:\n"+
		"  - {name: c, image: %s, imagePullPolicy: Never, args: [sleep]}\n", run, testenv.TestImage)
	require.NoError(t, os.WriteFile(path, []byte(manifest), 0o644))
}

// apiserverOutage stops the test kube-apiserver (etcd keeps running) and
// starts it again after d, with the project's scripts.
func apiserverOutage(t *testing.T, d time.Duration) {
	t.Helper()
	hack := filepath.Join(testenv.RepoRoot(t), "hack")
	out, err := exec.Command("bash", filepath.Join(hack, "apiserver-down.sh"), "--only", "kube-apiserver").CombinedOutput()
	require.NoError(t, err, "apiserver-down.sh: %s", out)
	time.Sleep(d)
	out, err = exec.Command("bash", filepath.Join(hack, "apiserver-up.sh")).CombinedOutput()
	require.NoError(t, err, "apiserver-up.sh: %s", out)
}

// watchPods feeds w the soak's pod events until the returned stop.
func watchPods(t *testing.T, n *node, w *afterDeletion) (stop func()) {
	factory := informers.NewSharedInformerFactoryWithOptions(n.client, 0, informers.WithNamespace("default"),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "soak=" + n.run }))
	inf := factory.Core().V1().Pods().Informer()
	_, err := inf.AddEventHandler(w.handlers())
	require.NoError(t, err)
	done := make(chan struct{})
	factory.Start(done)
	require.True(t, cache.WaitForCacheSync(done, inf.HasSynced))
	return func() { close(done); factory.Shutdown() }
}

// settle polls check every second until it finds nothing, and fails with
// what it found last after timeout.
func settle(t *testing.T, ctx context.Context, timeout time.Duration, what string, check func() []string) {
	t.Helper()
	var last []string
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(context.Context) (bool, error) {
		last = check()
		return len(last) == 0, nil
	})
	if err != nil {
		t.Fatalf("waited %s for %s; still:\n  %s", timeout, what, strings.Join(last, "\n  "))
	}
}

func notReady(node *v1.Node) []string {
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady && c.Status == v1.ConditionTrue {
			return nil
		}
	}
	return []string{"node not Ready"}
}

// cleanUp deletes the soak's pods while the agent still runs, waits until
// the runtime has none, then stops the agent and removes the Node, its
// Lease, the ConfigMap and the cgroups.
func cleanUp(t *testing.T, n *node, agent *agentProcess) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if t.Failed() {
		kept := filepath.Join(os.TempDir(), "nodekit-soak-"+n.run+".log")
		if b, err := os.ReadFile(agent.logPath); err == nil && os.WriteFile(kept, b, 0o644) == nil {
			t.Logf("the agent's whole log: %s", kept)
		}
		t.Logf("agent log (tail):\n%s", agent.logTail(40))
	}
	pods := n.client.CoreV1().Pods("default")
	_ = pods.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)},
		metav1.ListOptions{LabelSelector: "soak=" + n.run})
	if agent.alive() {
		_ = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			sbs, err := n.runtime.ListPodSandbox(ctx, nil)
			return err == nil && len(sbs) == 0, nil
		})
	}
	agent.stop(syscall.SIGTERM)
	_ = n.client.CoreV1().Nodes().Delete(ctx, n.name, metav1.DeleteOptions{})
	_ = n.client.CoordinationV1().Leases(nodestatus.LeaseNamespace).Delete(ctx, n.name, metav1.DeleteOptions{})
	_ = n.client.CoreV1().ConfigMaps("default").Delete(ctx, "soak-"+n.run, metav1.DeleteOptions{})
	if cg, err := cgroupmgr.New(cgroupmgr.Config{CgroupRoot: n.cgroupRoot}); err == nil {
		_ = cg.Destroy(cg.KubepodsCgroupName())
	}
	roots, _ := filepath.Glob("/sys/fs/cgroup/*" + n.cgroupRoot)
	for _, r := range roots {
		_ = os.Remove(r) // empty by now
	}
}
