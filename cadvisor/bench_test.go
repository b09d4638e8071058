package cadvisor

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
)

// collector110 is a collector over a cgroup v2 tree of 110 pods (the
// kubelet's default max-pods), each a sandbox and one container, read
// once.
func collector110(b *testing.B) *Collector {
	tree := cgroupTree{t: b, root: b.TempDir(), v2: true}
	tree.write("", v2Container())
	tree.write("/kubepods", v2Container())
	tree.write("/kubepods/burstable", v2Container())
	rt := &fakeRuntime{}
	for i := range 110 {
		podUID := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		sb, ct := fmt.Sprintf("%064x", 2*i+1), fmt.Sprintf("%064x", 2*i+2)
		pod := "/kubepods/burstable/pod" + podUID
		for _, cg := range []string{pod, pod + "/" + sb, pod + "/" + ct} {
			tree.write(cg, v2Container())
		}
		rt.addPod(fmt.Sprintf("pod-%d", i), podUID, sb, ct)
	}
	c, err := New(Config{Runtime: rt, KubepodsCgroup: "/kubepods", MountRoot: tree.root, CgroupV2: ptr.To(true)})
	require.NoError(b, err)
	require.NoError(b, c.Housekeep(context.Background()))
	return c
}

// BenchmarkScrape110Pods is one scrape of /metrics/cadvisor at 110 pods
// through the Collector's handler, as Prometheus makes it (gzip) and
// uncompressed.
func BenchmarkScrape110Pods(b *testing.B) { benchmarkScrape(b, collector110(b)) }

func promhttpHandler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{})
}

func benchmarkScrape(b *testing.B, h http.Handler) {
	for _, enc := range []string{"identity", "gzip"} {
		b.Run(enc, func(b *testing.B) {
			var size int
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, "/metrics/cadvisor", nil)
				req.Header.Set("Accept-Encoding", enc)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
				size = w.Body.Len()
			}
			b.ReportMetric(float64(size), "bytes/scrape")
		})
	}
}

// BenchmarkRetained110Pods reports the heap a Collector keeps between
// housekeepings at 110 pods: its snapshot and index ("housekept"), and
// with the compressed exposition a scrape rendered ("scraped"). What
// stays live on a node, whatever the GC's pace.
func BenchmarkRetained110Pods(b *testing.B) {
	live := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	for _, scraped := range []bool{false, true} {
		name := map[bool]string{false: "housekept", true: "scraped"}[scraped]
		b.Run(name, func(b *testing.B) {
			var retained uint64
			for b.Loop() {
				before := live()
				c := collector110(b)
				if scraped {
					c.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/metrics/cadvisor", nil))
				}
				after := live()
				runtime.KeepAlive(c)
				retained = after - before
			}
			b.ReportMetric(float64(retained), "retained-B")
		})
	}
}

// BenchmarkHousekeep110Pods is one housekeeping pass over the 110 pods'
// cgroups (files on tmpfs: the kernel's cgroupfs reads cost more).
func BenchmarkHousekeep110Pods(b *testing.B) {
	c := collector110(b)
	for b.Loop() {
		if err := c.Housekeep(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
