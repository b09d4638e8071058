package cadvisor

import (
	"bytes"
	"compress/gzip"
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
