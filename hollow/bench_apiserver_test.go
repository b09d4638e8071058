//go:build integration

package hollow_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/hollow"
	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/testenv"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// countingTransport counts the requests the hollow nodes send.
type countingTransport struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.rt.RoundTrip(r)
}

// rssBytes is this process's resident set (VmRSS).
func rssBytes(b *testing.B) int64 {
	f, err := os.Open("/proc/self/status")
	require.NoError(b, err)
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			require.NoError(b, err)
			return kb << 10
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// liveHeap is the heap the last GC found live: its next goal over
// 1+GOGC/100.
func liveHeap(ms *goruntime.MemStats, gogc int) uint64 {
	return uint64(float64(ms.NextGC) / (1 + float64(gogc)/100))
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkHollowNodes100x110 (with NODEKIT_HOLLOW_BENCH=1) runs NODEKIT_HOLLOW_NODES (100) hollow nodes
// in this process against the real API server, binds
// NODEKIT_HOLLOW_PODS (110) pods to each, and reports, as the API sees it:
// the time from the first pod created to all Running and Ready
// (s-to-all-running), and over a steady window of NODEKIT_HOLLOW_WINDOW
// seconds (30) once all run: RSS per node (the process's growth since
// before the nodes started, over the node count), CPU per node (cores),
// and the nodes' API requests per node per second.
func BenchmarkHollowNodes100x110(b *testing.B) {
	if os.Getenv("NODEKIT_HOLLOW_BENCH") != "1" {
		// Minutes per run: hack/test.sh runs it in a step of its own,
		// once (-benchtime 1x), not with every benchmark's -benchtime.
		b.Skip("set NODEKIT_HOLLOW_BENCH=1 to run it (hack/test.sh's hollow nodes step does)")
	}
	api := testenv.NeedAPIServer(b)
	nodesN, podsN := envInt("NODEKIT_HOLLOW_NODES", 100), envInt("NODEKIT_HOLLOW_PODS", 110)
	window := time.Duration(envInt("NODEKIT_HOLLOW_WINDOW", 30)) * time.Second
	for i := 0; i < b.N; i++ {
		runHollowScale(b, api, nodesN, podsN, window)
	}
}

func runHollowScale(b *testing.B, api *testenv.APIServer, nodesN, podsN int, window time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run := rand.String(5)
	prefix := "bench-" + run + "-"
	// The creator and watcher: fast, and apart from the nodes' transport.
	admin := rest.CopyConfig(api.AdminConfig)
	admin.QPS, admin.Burst = 2000, 2000
	// Connections of its own, closed at the end: nothing left running.
	creator := testenv.Client(b, admin)
	pods := creator.CoreV1().Pods("default")
	selector := "hollow-bench=" + run
	defer func() {
		_ = pods.DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)},
			metav1.ListOptions{LabelSelector: selector})
	}()

	// As examples/hollownodes runs (NODEKIT_HOLLOW_GOGC to try another).
	gogc := envInt("NODEKIT_HOLLOW_GOGC", hollow.GCPercent)
	defer debug.SetGCPercent(debug.SetGCPercent(gogc))
	goruntime.GC()
	debug.FreeOSMemory()
	rss0 := rssBytes(b)
	var requests atomic.Int64
	nodeCfg := rest.CopyConfig(api.AdminConfig)
	nodeCfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt, &requests} })
	nodes, err := hollow.New(ctx, hollow.Config{Rest: nodeCfg, Nodes: nodesN, NamePrefix: prefix})
	require.NoError(b, err)
	done := make(chan error, 1)
	go func() { done <- nodes.Run(ctx) }()
	defer func() { cancel(); require.NoError(b, <-done) }()
	poll.Eventually(b, func() bool {
		l, err := creator.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		n := 0
		for _, node := range l.Items {
			if strings.HasPrefix(node.Name, prefix) {
				n++
			}
		}
		return err == nil && n == nodesN
	}, 120*time.Second, 250*time.Millisecond, "all nodes registered")

	// An informer, not a bare watch: the API server closes a watch that
	// falls behind 11,000 pods' updates, and an informer lists and
	// watches again.
	// It is stopped once all are ready: its 11,000 pods are not the nodes'
	// memory.
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	readyPods := watchReady(watchCtx, b, creator, selector, nodesN*podsN)

	start := time.Now()
	var wg sync.WaitGroup
	work := make(chan [2]int)
	var createErr atomic.Value
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for job := range work {
				node, j := job[0], job[1]
				_, err := pods.Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s%d-%d", prefix, node, j),
					Labels: map[string]string{"hollow-bench": run}},
					Spec: v1.PodSpec{NodeName: fmt.Sprintf("%s%d", prefix, node), TerminationGracePeriodSeconds: ptr.To[int64](0),
						Containers: []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}, metav1.CreateOptions{})
				if err != nil {
					createErr.Store(err)
				}
			}
		}()
	}
	for j := 0; j < podsN; j++ { // round robin: every node fills at once, as a scheduler spreads
		for node := 0; node < nodesN; node++ {
			work <- [2]int{node, j}
		}
	}
	close(work)
	wg.Wait()
	created := time.Since(start)
	if err, _ := createErr.Load().(error); err != nil {
		b.Fatalf("creating pods: %v", err)
	}
	var end time.Time
	select {
	case end = <-readyPods.all:
	case <-time.After(10 * time.Minute):
		b.Fatalf("not all %d pods Running and Ready after 10m: %s", nodesN*podsN, readyPods.summary())
	}
	toAll := end.Sub(start)
	stopWatch()

	time.Sleep(10 * time.Second) // the start's work settles
	req0, cpu0, t0 := requests.Load(), cpuTime(), time.Now()
	stopProfile := profile(b)
	time.Sleep(window)
	elapsed := time.Since(t0)
	stopProfile()
	cpu := float64(cpuTime()-cpu0) / float64(elapsed)
	reqs := float64(requests.Load()-req0) / elapsed.Seconds()
	rss := rssBytes(b)
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	perNode := func(v float64) float64 { return v / float64(nodesN) }
	b.ReportMetric(toAll.Seconds(), "s-to-all-running")
	b.ReportMetric(perNode(float64(rss-rss0))/(1<<20), "MB-RSS/node")
	b.ReportMetric(perNode(cpu), "cores/node")
	b.ReportMetric(perNode(reqs), "req/node/s")
	b.Logf("HOLLOW nodes=%d pods=%d created in %v, all Running+Ready %v after the first create; steady %v: RSS %d MB (%d MB before the nodes), "+
		"heap in use %d MB (live %d MB at the last GC), stacks %d MB, heap kept from the OS %d MB, %d goroutines, CPU %.3f cores, %.1f API req/s",
		nodesN, nodesN*podsN, created.Round(time.Millisecond), toAll.Round(time.Millisecond), elapsed.Round(time.Second), rss>>20, rss0>>20,
		ms.HeapInuse>>20, liveHeap(&ms, gogc)>>20, ms.StackInuse>>20, (ms.HeapIdle-ms.HeapReleased)>>20, goruntime.NumGoroutine(), cpu, reqs)
}

// profile writes CPU (over the steady window) and heap profiles to
// $NODEKIT_HOLLOW_PROFILE, when set.
func profile(b *testing.B) func() {
	dir := os.Getenv("NODEKIT_HOLLOW_PROFILE")
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, "cpu.pprof"))
	require.NoError(b, err)
	require.NoError(b, pprof.StartCPUProfile(f))
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		h, err := os.Create(filepath.Join(dir, "heap.pprof"))
		require.NoError(b, err)
		goruntime.GC()
		require.NoError(b, pprof.WriteHeapProfile(h))
		h.Close()
		g, err := os.Create(filepath.Join(dir, "goroutines.txt"))
		require.NoError(b, err)
		require.NoError(b, pprof.Lookup("goroutine").WriteTo(g, 1))
		g.Close()
	}
}

// readyPods counts the pods the API shows Running with their one
// container Ready, and sends the time on all when every pod is.
type readyPods struct {
	store cache.Store
	all   chan time.Time
}

func watchReady(ctx context.Context, b *testing.B, client kubernetes.Interface, selector string, want int) *readyPods {
	lw := cache.NewFilteredListWatchFromClient(client.CoreV1().RESTClient(), "pods", "default",
		func(o *metav1.ListOptions) { o.LabelSelector = selector })
	inf := cache.NewSharedIndexInformer(lw, &v1.Pod{}, 0, cache.Indexers{})
	// The store keeps only what podReady and summary read: a whole pod
	// per pod would be tens of megabytes at the start's peak, which the
	// process's RSS keeps after the informer is gone and the benchmark
	// would count as the nodes'.
	require.NoError(b, inf.SetTransform(func(obj any) (any, error) {
		p, ok := obj.(*v1.Pod)
		if !ok {
			return obj, nil
		}
		out := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, ResourceVersion: p.ResourceVersion},
			Spec: v1.PodSpec{NodeName: p.Spec.NodeName}, Status: v1.PodStatus{Phase: p.Status.Phase}}
		for _, c := range p.Status.ContainerStatuses {
			kept := v1.ContainerStatus{Ready: c.Ready}
			if c.State.Waiting != nil {
				kept.State.Waiting = &v1.ContainerStateWaiting{Reason: c.State.Waiting.Reason}
			}
			out.Status.ContainerStatuses = append(out.Status.ContainerStatuses, kept)
		}
		return out, nil
	}))
	r := &readyPods{store: inf.GetStore(), all: make(chan time.Time, 1)}
	var mu sync.Mutex
	ready := map[string]bool{}
	seen := func(obj any) {
		p, ok := obj.(*v1.Pod)
		if !ok || !podReady(p) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !ready[p.Name] {
			ready[p.Name] = true
			if len(ready) == want {
				r.all <- time.Now()
			}
		}
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, obj any) { seen(obj) },
	})
	require.NoError(b, err)
	go inf.Run(ctx.Done())
	require.True(b, cache.WaitForCacheSync(ctx.Done(), inf.HasSynced), "pod informer never synced")
	return r
}

func podReady(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready
}

// summary says how many pods are ready, and what holds the others: their
// counts by phase and waiting reason, and by node.
func (r *readyPods) summary() string {
	ready, by, nodes := 0, map[string]int{}, map[string]int{}
	for _, obj := range r.store.List() {
		p := obj.(*v1.Pod)
		if podReady(p) {
			ready++
			continue
		}
		why := string(p.Status.Phase)
		for _, c := range p.Status.ContainerStatuses {
			if c.State.Waiting != nil {
				why += "/" + c.State.Waiting.Reason
			}
		}
		by[why]++
		nodes[p.Spec.NodeName]++
	}
	return fmt.Sprintf("%d are; the others by phase/reason %v, on %d nodes: %v", ready, by, len(nodes), nodes)
}
