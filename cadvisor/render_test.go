package cadvisor

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"k8s.io/utils/ptr"
)

// TestServeHTTPMatchesRegistry holds the handler's own text to what a
// registry holding the Collector gathers: the same families, series,
// values and timestamps, plain and gzipped.
func TestServeHTTPMatchesRegistry(t *testing.T) {
	tree := cgroupTree{t: t, root: t.TempDir(), v2: true}
	pod := "/kubepods/burstable/pod" + uid
	for _, cg := range []string{"", "/kubepods", "/kubepods/burstable", pod, pod + "/" + sandboxID, pod + "/" + appID} {
		tree.write(cg, v2Container())
	}
	rt := &fakeRuntime{}
	rt.addPod(`we"b\`, uid, sandboxID, appID) // label values the text format escapes
	c, err := New(Config{Runtime: rt, KubepodsCgroup: "/kubepods", MountRoot: tree.root, CgroupV2: ptr.To(true)})
	require.NoError(t, err)
	want := normalize(gather(t, c))

	for _, enc := range []string{"", "gzip"} {
		req := httptest.NewRequest(http.MethodGet, "/metrics/cadvisor", nil)
		req.Header.Set("Accept-Encoding", enc)
		w := httptest.NewRecorder()
		c.ServeHTTP(w, req)
		require.Equal(t, http.StatusOK, w.Code)
		var body io.Reader = w.Body
		if enc == "gzip" {
			require.Equal(t, "gzip", w.Header().Get("Content-Encoding"))
			zr, err := gzip.NewReader(w.Body)
			require.NoError(t, err)
			zr.Multistream(false) // one member, as every client reads it
			body = zr
		}
		raw, err := io.ReadAll(body)
		require.NoError(t, err, "the gzip stream's checksum and length hold")
		parser := expfmt.NewTextParser(model.UTF8Validation)
		got, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
		require.NoError(t, err)
		var families []*dto.MetricFamily
		for _, mf := range got {
			families = append(families, mf)
		}
		assert.Equal(t, want, normalize(families), "encoding %q", enc)
	}
}

// TestRenderedAtTheFirstScrapeAfterAHousekeeping: a housekeeping renders
// nothing; the first scrape after it renders its figures, later ones
// until the next housekeeping serve that rendering.
func TestRenderedAtTheFirstScrapeAfterAHousekeeping(t *testing.T) {
	tree := cgroupTree{t: t, root: t.TempDir(), v2: true}
	tree.write("", v2Container())
	tree.write("/kubepods", v2Container())
	c, err := New(Config{Runtime: &fakeRuntime{}, KubepodsCgroup: "/kubepods", MountRoot: tree.root, CgroupV2: ptr.To(true)})
	require.NoError(t, err)
	scrape := func() string {
		w := httptest.NewRecorder()
		c.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics/cadvisor", nil))
		require.Equal(t, http.StatusOK, w.Code)
		return w.Body.String()
	}
	ctx := context.Background()
	for _, step := range []struct {
		name        string
		pids        string // the root's pids.current before the step
		housekeep   bool
		scrapes     int
		wantRenders int
		wantPids    string
	}{
		{"housekeeping alone", "3", true, 0, 0, ""},
		{"two scrapes", "3", false, 2, 1, `container_threads{container="",id="/",image="",name="",namespace="",pod=""} 3 `},
		{"changed figures, not housekept", "7", false, 1, 1, `container_threads{container="",id="/",image="",name="",namespace="",pod=""} 3 `},
		{"housekept again, not scraped", "7", true, 0, 1, ""},
		{"scraped", "7", false, 1, 2, `container_threads{container="",id="/",image="",name="",namespace="",pod=""} 7 `},
	} {
		tree.write("", map[string]string{"pids.current": step.pids + "\n"})
		if step.housekeep {
			require.NoError(t, c.Housekeep(ctx), step.name)
		}
		var body string
		for range step.scrapes {
			body = scrape()
		}
		assert.Equal(t, step.wantRenders, c.renders, step.name)
		if step.wantPids != "" {
			assert.Contains(t, body, step.wantPids, step.name)
		}
	}
}

// normalize sorts families, series and labels, and drops
// container_last_seen's value and timestamp (the scrape's time).
func normalize(mfs []*dto.MetricFamily) []string {
	var out []string
	for _, mf := range mfs {
		mf = proto.Clone(mf).(*dto.MetricFamily)
		for _, m := range mf.Metric {
			sort.Slice(m.Label, func(i, j int) bool { return m.Label[i].GetName() < m.Label[j].GetName() })
			if mf.GetName() == "container_last_seen" {
				m.Gauge, m.TimestampMs = nil, nil
			}
			out = append(out, prototext(mf.GetName(), mf.GetHelp(), mf.GetType(), m))
		}
	}
	sort.Strings(out)
	return out
}

func prototext(name, help string, typ dto.MetricType, m *dto.Metric) string {
	return name + " " + help + " " + typ.String() + " " + m.String()
}

// BenchmarkScrape110PodsRegistry is the same scrape through a registry
// and promhttp, for comparison.
func BenchmarkScrape110PodsRegistry(b *testing.B) {
	c := collector110(b)
	reg := prometheus.NewRegistry()
	require.NoError(b, reg.Register(c))
	benchmarkScrape(b, promhttpHandler(reg))
}
