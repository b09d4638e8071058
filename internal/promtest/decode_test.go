package promtest

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// The HTTP API's answers, as Prometheus 3.16 writes them.
func TestDecodeResponse(t *testing.T) {
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	warnings, infos, err := decodeResponse(200, []byte(`{"status":"success","data":{"resultType":"vector","result":[
		{"metric":{"__name__":"up","job":"kubelet"},"value":[1795787425.441,"1"]},
		{"metric":{"pod":"web"},"value":[1795787425,"NaN"]}]},
		"infos":["PromQL info: metric might not be a counter"]}`), &data)
	require.NoError(t, err)
	assert.Empty(t, warnings)
	assert.Equal(t, []string{"PromQL info: metric might not be a counter"}, infos)
	v, err := decodeResult(data.ResultType, data.Result)
	require.NoError(t, err)
	require.Len(t, v, 2)
	assert.Equal(t, Sample{Metric: map[string]string{"__name__": "up", "job": "kubelet"}, Value: 1, Time: time.UnixMilli(1795787425441)}, v[0])
	assert.True(t, math.IsNaN(v[1].Value))
	assert.Equal(t, "up{job=\"kubelet\"} 1\n{pod=\"web\"} NaN", v.String(), "sorted")

	v, err = decodeResult("scalar", json.RawMessage(`[1795787425.441,"+Inf"]`))
	require.NoError(t, err)
	assert.Equal(t, Vector{{Value: math.Inf(1), Time: time.UnixMilli(1795787425441)}}, v)

	_, err = decodeResult("matrix", json.RawMessage(`[]`))
	assert.ErrorContains(t, err, `"matrix", not an instant vector`)
	_, err = decodeResult("vector", json.RawMessage(`[{"metric":{},"histogram":[1,{"count":"1"}]}]`))
	assert.ErrorContains(t, err, "native histogram")
	_, err = decodeResult("vector", json.RawMessage(`[{"metric":{},"value":[1,"x"]}]`))
	assert.ErrorContains(t, err, `value "x"`)

	_, _, err = decodeResponse(400, []byte(`{"status":"error","errorType":"bad_data","error":"1:9: parse error"}`), &data)
	assert.EqualError(t, err, "HTTP 400: bad_data: 1:9: parse error")
	_, _, err = decodeResponse(405, []byte("Method Not Allowed\n"), &data)
	assert.EqualError(t, err, `HTTP 405, not the API's JSON: "Method Not Allowed\n"`)
}

// prometheus.yml scrapes as kube-prometheus's kubelet ServiceMonitor does.
func TestWriteConfig(t *testing.T) {
	dir := t.TempDir()
	path, err := writeConfig(dir, Config{
		ScrapeInterval: 1500 * time.Millisecond,
		Targets: []Target{
			{URL: "https://127.0.0.1:10250/metrics/cadvisor", BearerToken: "tok", CAPEM: []byte("PEM"), Labels: map[string]string{"node": "n1"}},
			{URL: "http://127.0.0.1:8080/metrics?a=1", Job: "agent", HonorTimestamps: true},
		},
		Rules:     []Rule{{Record: "r", Expr: "sum(up)"}},
		RuleFiles: []string{"/x/*.yml"},
	})
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, yaml.Unmarshal(b, &got))
	assert.Equal(t, map[string]any{"scrape_interval": "1500ms", "scrape_timeout": "1500ms", "evaluation_interval": "1500ms"}, got["global"])
	assert.Equal(t, []any{"/x/*.yml", filepath.Join(dir, "rules.yml")}, got["rule_files"])
	relabel := []any{map[string]any{"source_labels": []any{"__metrics_path__"}, "target_label": "metrics_path"}}
	assert.Equal(t, []any{
		map[string]any{
			"job_name": "kubelet-0", "scheme": "https", "metrics_path": "/metrics/cadvisor",
			"honor_labels": true, "honor_timestamps": false,
			"authorization":   map[string]any{"type": "Bearer", "credentials_file": filepath.Join(dir, "token-0")},
			"tls_config":      map[string]any{"ca_file": filepath.Join(dir, "ca-0.pem"), "insecure_skip_verify": false},
			"relabel_configs": relabel,
			"static_configs":  []any{map[string]any{"targets": []any{"127.0.0.1:10250"}, "labels": map[string]any{"job": "kubelet", "node": "n1"}}},
		},
		map[string]any{
			"job_name": "agent-1", "scheme": "http", "metrics_path": "/metrics", "params": map[string]any{"a": []any{"1"}},
			"honor_labels": true, "honor_timestamps": true,
			"relabel_configs": relabel,
			"static_configs":  []any{map[string]any{"targets": []any{"127.0.0.1:8080"}, "labels": map[string]any{"job": "agent"}}},
		},
	}, got["scrape_configs"])
	token, err := os.ReadFile(filepath.Join(dir, "token-0"))
	require.NoError(t, err)
	assert.Equal(t, "tok", string(token))
	rules, err := os.ReadFile(filepath.Join(dir, "rules.yml"))
	require.NoError(t, err)
	assert.YAMLEq(t, `groups: [{name: promtest, interval: 1500ms, rules: [{record: r, expr: sum(up)}]}]`, string(rules))

	_, err = writeConfig(dir, Config{Targets: []Target{{URL: "/metrics"}}})
	assert.ErrorContains(t, err, "not an http(s)://host:port/path URL")
}

// hack/prometheus.sh builds the Version Dir looks for.
func TestVersionIsTheScripts(t *testing.T) {
	script, err := os.ReadFile("../../hack/prometheus.sh")
	require.NoError(t, err)
	assert.Contains(t, string(script), "\nVERSION="+Version+" ")
}
