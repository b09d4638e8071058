// Package promtest runs a real Prometheus for a test (#33): Start writes a
// scrape configuration for the test's targets (HTTPS with a bearer token, as
// kube-prometheus scrapes a kubelet), starts prometheus on 127.0.0.1 with its
// storage in the test's temporary directory and stops it when the test ends;
// Query evaluates PromQL through the HTTP API. CheckMetrics lints an
// exposition with `promtool check metrics`.
//
// The binaries come from hack/prometheus.sh, which builds them once from
// the Go module proxy; Dir says where they are. Nothing of Prometheus is
// linked into the test: the HTTP API's JSON is decoded here.
package promtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/nodekit-dev/nodekit/internal/poll"
)

// Version is the module version of github.com/prometheus/prometheus that
// hack/prometheus.sh builds (Prometheus 3.16.0).
const Version = "v0.316.0"

// Help says how to get the binaries.
const Help = `build prometheus and promtool first: bash hack/prometheus.sh
(it prints their directory, by default ~/.cache/nodekit-bins/prometheus-` + Version + `;
hack/test.sh runs it and exports NODEKIT_PROMETHEUS_DIR), or set NODEKIT_PROMETHEUS_DIR to a directory with both`

// Dir is the directory with prometheus and promtool: $NODEKIT_PROMETHEUS_DIR
// when set, else hack/prometheus.sh's cache,
// ${NODEKIT_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodekit-bins}/prometheus-<Version>.
// It fails the test, saying how to build them, when either is missing.
func Dir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("NODEKIT_PROMETHEUS_DIR")
	if dir == "" {
		cache := os.Getenv("NODEKIT_BIN_CACHE")
		if cache == "" {
			userCache, err := os.UserCacheDir()
			if err != nil {
				t.Fatalf("no cache directory (%v) and NODEKIT_PROMETHEUS_DIR not set; %s", err, Help)
			}
			cache = filepath.Join(userCache, "nodekit-bins")
		}
		dir = filepath.Join(cache, "prometheus-"+Version)
	}
	for _, name := range []string{"prometheus", "promtool"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			t.Fatalf("no executable %s in %s; %s", name, dir, Help)
		}
	}
	return dir
}

// Promtool is the path of promtool in Dir.
func Promtool(t testing.TB) string {
	t.Helper()
	return filepath.Join(Dir(t), "promtool")
}

// CheckMetrics lints exposition (the Prometheus text format) with
// `promtool check metrics` and returns what it reports: "" when it finds no
// problem, else its lines (a lint problem, e.g. a counter without the
// _total suffix, or the error of an exposition it cannot parse). It fails
// the test if promtool cannot run.
func CheckMetrics(t testing.TB, promtool string, exposition []byte) (problems string) {
	t.Helper()
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(exposition)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return ""
	// 3: lint problems; 1: the exposition does not parse.
	case errors.As(err, &exit) && (exit.ExitCode() == 3 || exit.ExitCode() == 1) && len(bytes.TrimSpace(out)) > 0:
		return strings.TrimSpace(string(out))
	default:
		t.Fatalf("%s check metrics: %v: %s", promtool, err, out)
		return ""
	}
}

// Config is one Prometheus server.
type Config struct {
	// Dir holds the prometheus binary; "" is Dir(t).
	Dir string
	// Targets are scraped from the start, each in a scrape config of its own.
	Targets []Target
	// ScrapeInterval is every target's scrape interval and the rules'
	// evaluation interval; 0 is 1 s. Milliseconds at the finest.
	ScrapeInterval time.Duration
	// ScrapeTimeout is every scrape's; 0 is ScrapeInterval (it may not be
	// longer).
	ScrapeTimeout time.Duration
	// Rules are recording rules, evaluated every ScrapeInterval in one
	// group, in order.
	Rules []Rule
	// RuleFiles are further rule files (Prometheus's rule_files: paths or
	// globs).
	RuleFiles []string
	// Args are further flags of prometheus (e.g. --enable-feature=...).
	Args []string
}

// Target is one endpoint scraped as kube-prometheus's kubelet ServiceMonitor
// scrapes the kubelet's /metrics, /metrics/cadvisor and /metrics/probes:
// honor_labels (the exposition's labels win over the target's), the job
// label Job, and the label metrics_path set to the path (the
// kubernetes-mixin's selectors there are job="kubelet",
// metrics_path="/metrics/cadvisor" and job="kubelet", metrics_path="/metrics").
type Target struct {
	// URL is the endpoint, e.g. https://127.0.0.1:10250/metrics/cadvisor:
	// its scheme, host:port and path make the scrape config's scheme,
	// static target and metrics_path; a query makes its params.
	URL string
	// Job is the job label; "" is "kubelet", as kube-prometheus labels the kubelet.
	Job string
	// Labels are further target labels (e.g. node).
	Labels map[string]string
	// BearerToken is sent as "Authorization: Bearer <token>", from a
	// credentials file as kube-prometheus's bearerTokenFile; "" sends none.
	BearerToken string
	// CAPEM holds the certificates the server's must chain to, in PEM;
	// InsecureSkipVerify accepts any (kube-prometheus does for the kubelet).
	CAPEM              []byte
	InsecureSkipVerify bool
	// ServerName is the name the server's certificate must have; "" is
	// the URL's host.
	ServerName string
	// HonorTimestamps keeps the timestamps of the exposition's samples.
	// kube-prometheus drops them for /metrics/cadvisor (honorTimestamps:
	// false, the zero value here) and keeps them for /metrics, which has none.
	HonorTimestamps bool
}

// Rule is a recording rule: Expr's result is recorded as the series Record
// with Labels added.
type Rule struct {
	Record string
	Expr   string
	Labels map[string]string
}

// Prometheus is a prometheus process started by Start.
type Prometheus struct {
	// URL is its HTTP API's base, http://127.0.0.1:<port>.
	URL string
	// Dir holds its prometheus.yml, rules.yml, data/ and prometheus.log.
	Dir string

	targets int
	cmd     *exec.Cmd
	exited  chan struct{} // closed once cmd.Wait returned
	waitErr error         // cmd.Wait's; read after exited is closed
	client  *http.Client
	// logShown: a failure has shown the log's end already.
	logShown bool
}

// Start starts prometheus for cfg on 127.0.0.1 (a port of the kernel's
// choosing) and waits until it is ready; it stops it when the test ends. It
// fails the test, with the end of prometheus's log, when prometheus does not
// start or becomes ready (a configuration it refuses, a rule that does not
// parse).
func Start(t testing.TB, cfg Config) *Prometheus {
	t.Helper()
	bin := cfg.Dir
	if bin == "" {
		bin = Dir(t)
	}
	p := &Prometheus{Dir: t.TempDir(), targets: len(cfg.Targets), exited: make(chan struct{})}
	configFile, err := writeConfig(p.Dir, cfg)
	if err != nil {
		t.Fatalf("promtest: %v", err)
	}
	logFile, err := os.Create(filepath.Join(p.Dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close() // the child has its own descriptor
	args := []string{"--config.file=" + configFile, "--storage.tsdb.path=" + filepath.Join(p.Dir, "data"),
		"--web.listen-address=127.0.0.1:0", "--log.format=json"}
	p.cmd = exec.Command(filepath.Join(bin, "prometheus"), append(args, cfg.Args...)...)
	p.cmd.Dir = p.Dir
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = sysProcAttr()
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("promtest: starting prometheus: %v; %s", err, Help)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	transport := &http.Transport{IdleConnTimeout: 5 * time.Second}
	p.client = &http.Client{Transport: transport}
	t.Cleanup(func() {
		// A failed test's end of the log, before prometheus logs its shutdown.
		var tail string
		if t.Failed() && !p.logShown {
			tail = p.logTail(30)
		}
		p.stop(t)
		transport.CloseIdleConnections()
		if tail == "" && t.Failed() && !p.logShown {
			tail = p.logTail(30)
		}
		if tail != "" {
			t.Logf("prometheus's log (%s), last lines:\n%s", filepath.Join(p.Dir, "prometheus.log"), tail)
		}
	})

	// The port it listens on is in its log ("Listening on").
	var addr string
	poll.Eventually(t, func() bool {
		p.failIfExited(t, "starting")
		addr = p.listenAddress()
		return addr != ""
	}, time.Minute, 20*time.Millisecond, "prometheus listening; its log:\n%s", p.failureLog)
	p.URL = "http://" + addr
	poll.Eventually(t, func() bool {
		p.failIfExited(t, "starting")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/-/ready", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := p.client.Do(req)
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, time.Minute, 50*time.Millisecond, "prometheus at %s ready; its log:\n%s", p.URL, p.failureLog)
	return p
}

// stop ends prometheus: SIGTERM, and SIGKILL if it has not exited in 15 s.
// Prometheus gone before is an error of the test.
func (p *Prometheus) stop(t testing.TB) {
	select {
	case <-p.exited:
		if !t.Failed() {
			t.Errorf("prometheus exited before the test ended (%v)", p.waitErr)
		}
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		t.Errorf("prometheus (pid %d) still running 15 s after SIGTERM; killed", p.cmd.Process.Pid)
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// failIfExited fails the test if prometheus has exited.
func (p *Prometheus) failIfExited(t testing.TB, doing string) {
	t.Helper()
	select {
	case <-p.exited:
		t.Fatalf("prometheus exited while %s (%v); its log:\n%s", doing, p.waitErr, p.failureLog())
	default:
	}
}

// Log is prometheus's log so far (JSON lines).
func (p *Prometheus) Log() string {
	b, _ := os.ReadFile(filepath.Join(p.Dir, "prometheus.log"))
	return string(b)
}

// failureLog is the log's end for a failure's message.
func (p *Prometheus) failureLog() string {
	p.logShown = true
	return p.logTail(20)
}

func (p *Prometheus) logTail(n int) string {
	lines := strings.Split(strings.TrimRight(p.Log(), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// listenAddress is the address of the log's "Listening on" line, or "".
func (p *Prometheus) listenAddress() string {
	s := bufio.NewScanner(strings.NewReader(p.Log()))
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		var line struct{ Msg, Address string }
		if json.Unmarshal(s.Bytes(), &line) == nil && line.Msg == "Listening on" {
			if host, _, err := net.SplitHostPort(line.Address); err == nil && host == "127.0.0.1" {
				return line.Address
			}
		}
	}
	return ""
}

// writeConfig writes prometheus.yml, rules.yml and the targets' credentials
// and CAs into dir, and returns prometheus.yml's path.
func writeConfig(dir string, cfg Config) (string, error) {
	interval := cfg.ScrapeInterval
	if interval == 0 {
		interval = time.Second
	}
	timeout := cfg.ScrapeTimeout
	if timeout == 0 {
		timeout = interval
	}
	if interval < time.Millisecond || timeout < time.Millisecond {
		return "", fmt.Errorf("scrape interval %v, timeout %v: a millisecond at least", interval, timeout)
	}
	c := promConfig{
		Global:    global{ScrapeInterval: duration(interval), ScrapeTimeout: duration(timeout), EvaluationInterval: duration(interval)},
		RuleFiles: slices.Clone(cfg.RuleFiles),
	}
	if len(cfg.Rules) > 0 {
		g := ruleGroup{Name: "promtest", Interval: duration(interval)}
		for _, r := range cfg.Rules {
			g.Rules = append(g.Rules, recordingRule(r))
		}
		path := filepath.Join(dir, "rules.yml")
		if err := writeYAML(path, ruleFile{Groups: []ruleGroup{g}}, 0o644); err != nil {
			return "", err
		}
		c.RuleFiles = append(c.RuleFiles, path)
	}
	for i, tg := range cfg.Targets {
		u, err := url.Parse(tg.URL)
		if err != nil {
			return "", fmt.Errorf("target %d: %w", i, err)
		}
		if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return "", fmt.Errorf("target %d: %q is not an http(s)://host:port/path URL", i, tg.URL)
		}
		job := tg.Job
		if job == "" {
			job = "kubelet"
		}
		path := u.EscapedPath()
		if path == "" {
			path = "/metrics"
		}
		labels := map[string]string{"job": job}
		maps.Copy(labels, tg.Labels)
		sc := scrapeConfig{
			JobName:         fmt.Sprintf("%s-%d", job, i), // unique; the job label is the static one
			Scheme:          u.Scheme,
			MetricsPath:     path,
			HonorLabels:     true,
			HonorTimestamps: tg.HonorTimestamps,
			RelabelConfigs:  []relabelConfig{{SourceLabels: []string{"__metrics_path__"}, TargetLabel: "metrics_path"}},
			StaticConfigs:   []staticConfig{{Targets: []string{u.Host}, Labels: labels}},
		}
		if q := u.Query(); len(q) > 0 {
			sc.Params = q
		}
		if tg.BearerToken != "" {
			file := filepath.Join(dir, fmt.Sprintf("token-%d", i))
			if err := os.WriteFile(file, []byte(tg.BearerToken), 0o600); err != nil {
				return "", err
			}
			sc.Authorization = &authorization{Type: "Bearer", CredentialsFile: file}
		}
		if u.Scheme == "https" {
			sc.TLSConfig = &tlsConfig{InsecureSkipVerify: tg.InsecureSkipVerify, ServerName: tg.ServerName}
			if len(tg.CAPEM) > 0 {
				file := filepath.Join(dir, fmt.Sprintf("ca-%d.pem", i))
				if err := os.WriteFile(file, tg.CAPEM, 0o644); err != nil {
					return "", err
				}
				sc.TLSConfig.CAFile = file
			}
		}
		c.ScrapeConfigs = append(c.ScrapeConfigs, sc)
	}
	path := filepath.Join(dir, "prometheus.yml")
	return path, writeYAML(path, c, 0o644)
}

func writeYAML(path string, v any, mode os.FileMode) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, mode)
}

// duration is d in Prometheus's duration syntax, in milliseconds.
func duration(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) + "ms" }

// Prometheus's configuration, as much of it as Start writes.
type (
	promConfig struct {
		Global        global         `json:"global"`
		RuleFiles     []string       `json:"rule_files,omitempty"`
		ScrapeConfigs []scrapeConfig `json:"scrape_configs,omitempty"`
	}
	global struct {
		ScrapeInterval     string `json:"scrape_interval"`
		ScrapeTimeout      string `json:"scrape_timeout"`
		EvaluationInterval string `json:"evaluation_interval"`
	}
	scrapeConfig struct {
		JobName         string              `json:"job_name"`
		Scheme          string              `json:"scheme"`
		MetricsPath     string              `json:"metrics_path"`
		Params          map[string][]string `json:"params,omitempty"`
		HonorLabels     bool                `json:"honor_labels"`
		HonorTimestamps bool                `json:"honor_timestamps"`
		Authorization   *authorization      `json:"authorization,omitempty"`
		TLSConfig       *tlsConfig          `json:"tls_config,omitempty"`
		RelabelConfigs  []relabelConfig     `json:"relabel_configs,omitempty"`
		StaticConfigs   []staticConfig      `json:"static_configs"`
	}
	authorization struct {
		Type            string `json:"type"`
		CredentialsFile string `json:"credentials_file"`
	}
	tlsConfig struct {
		CAFile             string `json:"ca_file,omitempty"`
		ServerName         string `json:"server_name,omitempty"`
		InsecureSkipVerify bool   `json:"insecure_skip_verify"`
	}
	relabelConfig struct {
		SourceLabels []string `json:"source_labels"`
		TargetLabel  string   `json:"target_label"`
	}
	staticConfig struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels,omitempty"`
	}
	ruleFile struct {
		Groups []ruleGroup `json:"groups"`
	}
	ruleGroup struct {
		Name     string          `json:"name"`
		Interval string          `json:"interval"`
		Rules    []recordingRule `json:"rules"`
	}
	recordingRule struct {
		Record string            `json:"record"`
		Expr   string            `json:"expr"`
		Labels map[string]string `json:"labels,omitempty"`
	}
)

// Sample is one series' value at one time.
type Sample struct {
	Metric map[string]string // its labels, __name__ among them (none for a scalar)
	Value  float64
	Time   time.Time
}

func (s Sample) String() string {
	names := slices.Sorted(maps.Keys(s.Metric))
	var b strings.Builder
	b.WriteString(s.Metric["__name__"])
	b.WriteByte('{')
	sep := ""
	for _, n := range names {
		if n != "__name__" {
			fmt.Fprintf(&b, "%s%s=%q", sep, n, s.Metric[n])
			sep = ", "
		}
	}
	fmt.Fprintf(&b, "} %v", s.Value)
	return b.String()
}

// Vector is an instant query's result.
type Vector []Sample

// String is one sample a line, sorted.
func (v Vector) String() string {
	lines := make([]string, len(v))
	for i, s := range v {
		lines[i] = s.String()
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// Result is an instant query's result with the annotations Prometheus
// returned beside it: Warnings (e.g. a histogram bucket without le) and
// Infos (e.g. rate() of a metric whose name does not end in _total).
type Result struct {
	Vector   Vector
	Warnings []string
	Infos    []string
}

// Query evaluates promql at the current time through /api/v1/query. A
// scalar is one Sample without labels; a range vector or a string is an
// error, as is a query Prometheus refuses (the error says why).
func (p *Prometheus) Query(ctx context.Context, promql string) (Vector, error) {
	r, err := p.QueryResult(ctx, promql)
	if err != nil {
		return nil, err
	}
	return r.Vector, nil
}

// QueryResult is Query with the annotations.
func (p *Prometheus) QueryResult(ctx context.Context, promql string) (*Result, error) {
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	warnings, infos, err := p.api(ctx, http.MethodPost, "/api/v1/query", url.Values{"query": {promql}}, &data)
	if err != nil {
		return nil, fmt.Errorf("query %q: %w", promql, err)
	}
	v, err := decodeResult(data.ResultType, data.Result)
	if err != nil {
		return nil, fmt.Errorf("query %q: %w", promql, err)
	}
	return &Result{Vector: v, Warnings: warnings, Infos: infos}, nil
}

func decodeResult(resultType string, result json.RawMessage) (Vector, error) {
	switch resultType {
	case "vector":
		var samples []struct {
			Metric    map[string]string `json:"metric"`
			Value     []json.RawMessage `json:"value"`
			Histogram json.RawMessage   `json:"histogram"`
		}
		if err := json.Unmarshal(result, &samples); err != nil {
			return nil, fmt.Errorf("decoding the vector: %w", err)
		}
		v := make(Vector, 0, len(samples))
		for _, s := range samples {
			if s.Value == nil && s.Histogram != nil {
				return nil, fmt.Errorf("a native histogram sample (%v), which promtest does not decode", s.Metric)
			}
			value, at, err := decodeValue(s.Value)
			if err != nil {
				return nil, err
			}
			v = append(v, Sample{Metric: s.Metric, Value: value, Time: at})
		}
		return v, nil
	case "scalar":
		var pair []json.RawMessage
		if err := json.Unmarshal(result, &pair); err != nil {
			return nil, fmt.Errorf("decoding the scalar: %w", err)
		}
		value, at, err := decodeValue(pair)
		if err != nil {
			return nil, err
		}
		return Vector{{Value: value, Time: at}}, nil
	default:
		return nil, fmt.Errorf("the result is a %q, not an instant vector or a scalar", resultType)
	}
}

// decodeValue decodes [<unix time in seconds>, "<value>"].
func decodeValue(pair []json.RawMessage) (float64, time.Time, error) {
	if len(pair) != 2 {
		return 0, time.Time{}, fmt.Errorf("a value of %d elements, not [time, value]", len(pair))
	}
	var at float64
	var s string
	if err := json.Unmarshal(pair[0], &at); err != nil {
		return 0, time.Time{}, fmt.Errorf("a sample's time %s: %w", pair[0], err)
	}
	if err := json.Unmarshal(pair[1], &s); err != nil {
		return 0, time.Time{}, fmt.Errorf("a sample's value %s: %w", pair[1], err)
	}
	value, err := strconv.ParseFloat(s, 64) // also "NaN", "+Inf", "-Inf"
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("a sample's value %q: %w", s, err)
	}
	return value, time.UnixMilli(int64(math.Round(at * 1000))), nil
}

// TargetHealth is an active target as /api/v1/targets reports it.
type TargetHealth struct {
	ScrapePool string            `json:"scrapePool"`
	ScrapeURL  string            `json:"scrapeUrl"`
	Labels     map[string]string `json:"labels"`
	Health     string            `json:"health"` // "up", "down" or "unknown" (not scraped yet)
	LastError  string            `json:"lastError"`
	LastScrape time.Time         `json:"lastScrape"`
}

func (h TargetHealth) String() string {
	s := fmt.Sprintf("%s: %s", h.ScrapeURL, h.Health)
	if h.LastError != "" {
		s += " (" + h.LastError + ")"
	}
	return s
}

// Targets are the active targets and their health.
func (p *Prometheus) Targets(ctx context.Context) ([]TargetHealth, error) {
	var data struct {
		ActiveTargets []TargetHealth `json:"activeTargets"`
	}
	if _, _, err := p.api(ctx, http.MethodGet, "/api/v1/targets", url.Values{"state": {"active"}}, &data); err != nil {
		return nil, fmt.Errorf("targets: %w", err)
	}
	return data.ActiveTargets, nil
}

// WaitForTargetsUp waits until every target of the Config has been scraped
// and is up (Prometheus discovers static targets within about 5 s), and
// fails the test, with each target's health and last error, if they are not
// within timeout.
func (p *Prometheus) WaitForTargetsUp(t testing.TB, timeout time.Duration) {
	t.Helper()
	var last []TargetHealth
	var lastErr error
	poll.Eventually(t, func() bool {
		p.failIfExited(t, "scraping")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		last, lastErr = p.Targets(ctx)
		if lastErr != nil || len(last) != p.targets {
			return false
		}
		for _, h := range last {
			if h.Health != "up" {
				return false
			}
		}
		return true
	}, timeout, 100*time.Millisecond, "%d targets up: %s", p.targets, func() string {
		if lastErr != nil {
			return lastErr.Error()
		}
		s := make([]string, len(last))
		for i, h := range last {
			s[i] = h.String()
		}
		return fmt.Sprintf("%d active: %s", len(last), strings.Join(s, "; "))
	})
}

// api calls the HTTP API's path with params (a POSTed form, as a long
// query needs, where the API takes one; else the URL's query) and decodes
// the response's data into data.
func (p *Prometheus) api(ctx context.Context, method, path string, params url.Values, data any) (warnings, infos []string, err error) {
	var req *http.Request
	if method == http.MethodPost {
		req, err = http.NewRequestWithContext(ctx, method, p.URL+path, strings.NewReader(params.Encode()))
		if err == nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
	} else {
		req, err = http.NewRequestWithContext(ctx, method, p.URL+path+"?"+params.Encode(), nil)
	}
	if err != nil {
		return nil, nil, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	return decodeResponse(resp.StatusCode, body, data)
}

// decodeResponse decodes the HTTP API's envelope
// {"status", "data", "errorType", "error", "warnings", "infos"}.
func decodeResponse(code int, body []byte, data any) (warnings, infos []string, err error) {
	var env struct {
		Status    string          `json:"status"`
		Data      json.RawMessage `json:"data"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
		Warnings  []string        `json:"warnings"`
		Infos     []string        `json:"infos"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, nil, fmt.Errorf("HTTP %d, not the API's JSON: %.200q", code, body)
	}
	if env.Status != "success" {
		return nil, nil, fmt.Errorf("HTTP %d: %s: %s", code, env.ErrorType, env.Error)
	}
	if err := json.Unmarshal(env.Data, data); err != nil {
		return nil, nil, fmt.Errorf("decoding the data: %w", err)
	}
	return env.Warnings, env.Infos, nil
}
