package server_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/server"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var now = time.Date(2026, 11, 23, 10, 0, 10, 0, time.UTC)

// criLog is a CRI log file: two lines a second apart, a runtime-split
// line, and an unfinished last line.
const criLog = "2026-11-23T10:00:00.000000000Z stdout F one\n" +
	"2026-11-23T10:00:05.000000000Z stderr F two\n" +
	"2026-11-23T10:00:08.000000000Z stdout P split-\n" +
	"2026-11-23T10:00:08.000000000Z stdout F joined\n" +
	"2026-11-23T10:00:09.000000000Z stdout F unfinish"

func logsHandler(t *testing.T) *server.Handler {
	return mustNew(t, logsHandlerConfig(t, t.TempDir()))
}

// logsHandlerConfig serves the logs of default/web (logsPod) from files in
// dir: criLog for a container's newest instance, "old" for the one before.
func logsHandlerConfig(t testing.TB, dir string) server.Config {
	require.NoError(t, os.WriteFile(filepath.Join(dir, "0.log"), []byte(criLog), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "prev.log"), []byte("2026-11-23T09:00:00Z stdout F old\n"), 0o644))
	return server.Config{Clock: clocktesting.NewFakeClock(now), Pods: &podSource{pods: []v1.Pod{logsPod()}},
		Logs: server.LogLocatorFunc(func(_ context.Context, ns, pod, c string, previous bool) (string, error) {
			if ns != "default" || pod != "web" {
				return "", errors.New("pod default/" + pod + " not found")
			}
			if previous {
				return filepath.Join(dir, "prev.log"), nil
			}
			return filepath.Join(dir, "0.log"), nil
		})}
}

func get(h http.Handler, url string) (int, string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", url, nil))
	return rec.Code, rec.Body.String()
}

func TestContainerLogsQueryParameters(t *testing.T) {
	h := logsHandler(t)
	for _, tc := range []struct {
		query    string
		wantCode int
		want     string
	}{
		{"", 200, "one\ntwo\nsplit-joined\nunfinish"},
		{"?tailLines=1", 200, "joined\nunfinish"},
		{"?tailLines=2", 200, "split-joined\nunfinish"},
		{"?tailLines=0", 200, ""},
		{"?tailLines=100", 200, "one\ntwo\nsplit-joined\nunfinish"},
		{"?limitBytes=6", 200, "one\ntw"},
		{"?sinceSeconds=3", 200, "split-joined\nunfinish"},
		{"?sinceSeconds=6", 200, "two\nsplit-joined\nunfinish"},
		{"?sinceTime=2026-11-23T10:00:05Z", 200, "two\nsplit-joined\nunfinish"},
		{"?timestamps=true&tailLines=1", 200, "2026-11-23T10:00:08.000000000Z joined\n2026-11-23T10:00:09.000000000Z unfinish"},
		{"?previous=true", 200, "old\n"},
		{"?tailLines=x", 400, "tailLines: invalid value \"x\": must be an integer >= 0\n"},
		{"?tailLines=99999999999999999999", 400, "tailLines: invalid value \"99999999999999999999\": must be an integer >= 0\n"},
		{"?tailLines=-1", 400, "tailLines: invalid value \"-1\": must be an integer >= 0\n"},
		{"?tailLines=9223372036854775807", 200, "one\ntwo\nsplit-joined\nunfinish"}, // huge: the whole file, read once
		{"?limitBytes=0", 400, "limitBytes: invalid value \"0\": must be an integer >= 1\n"},
		{"?follow=maybe", 400, "follow: invalid value \"maybe\": must be true or false\n"},
		{"?sinceSeconds=1&sinceTime=2026-11-23T10:00:05Z", 400, "sinceSeconds and sinceTime: only one may be given\n"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			code, body := get(h, "/containerLogs/default/web/c"+tc.query)
			assert.Equal(t, tc.wantCode, code)
			assert.Equal(t, tc.want, body)
		})
	}
	code, _ := get(h, "/containerLogs/default/web")
	assert.Equal(t, 400, code)
}

// A tail of a file much larger than the read block finds its lines from
// the end.
func TestContainerLogsTailOfALargeFile(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := 0; i < 20000; i++ {
		b.WriteString("2026-11-23T10:00:00Z stdout F line " + strings.Repeat("x", i%50) + "\n")
	}
	b.WriteString("2026-11-23T10:00:00Z stdout F last\n")
	path := filepath.Join(dir, "0.log")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	h := mustNew(t, server.Config{Pods: &podSource{pods: []v1.Pod{runningPod("a", "b", "c")}},
		Logs: server.LogLocatorFunc(func(context.Context, string, string, string, bool) (string, error) {
			return path, nil
		})})
	_, body := get(h, "/containerLogs/a/b/c?tailLines=2")
	assert.Equal(t, "line "+strings.Repeat("x", 19999%50)+"\nlast\n", body)
}

func TestContainerLogsFollowPrintsNewLinesUntilTheClientGoes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	require.NoError(t, os.WriteFile(path, []byte("2026-11-23T10:00:00Z stdout F before\n2026-11-23T10:00:01Z stdout F PART"), 0o644))
	h := mustNew(t, server.Config{Pods: &podSource{pods: []v1.Pod{runningPod("a", "b", "c")}},
		Logs: server.LogLocatorFunc(func(context.Context, string, string, string, bool) (string, error) {
			return path, nil
		})})
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/containerLogs/a/b/c?follow=true&tailLines=0", nil)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("-END\n2026-11-23T10:00:02Z stdout F after\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	want := "PART-END\nafter\n"
	got := make([]byte, len(want))
	_, err = io.ReadFull(resp.Body, got)
	require.NoError(t, err)
	assert.Equal(t, want, string(got))
	cancel()
}

func TestHealthzRunsTheNamedChecks(t *testing.T) {
	failing := errors.New("relist took 4m")
	h := mustNew(t, server.Config{Checks: []server.HealthCheck{
		{Name: "runtime", Check: func(context.Context) error { return nil }},
		{Name: "pleg", Check: func(context.Context) error { return failing }},
	}})
	code, body := get(h, "/healthz")
	assert.Equal(t, 500, code)
	assert.Equal(t, "[+]runtime ok\n[-]pleg failed: relist took 4m\nhealthz check failed\n", body)
	code, body = get(h, "/healthz/runtime")
	assert.Equal(t, 200, code)
	assert.Equal(t, "ok", body)
	code, _ = get(h, "/healthz/nope")
	assert.Equal(t, 404, code)
	failing = nil
	code, body = get(h.Healthz(), "/healthz?verbose")
	assert.Equal(t, 200, code)
	assert.Equal(t, "[+]runtime ok\n[+]pleg ok\nhealthz check passed\n", body)
}

type pods []v1.Pod

func (p pods) Pods() []v1.Pod { return p }

type stats []*runtimeapi.ContainerStats

func (s stats) ListContainerStats(context.Context, *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	return s, nil
}

func TestPodsMetricsStatsAndDebugHandlers(t *testing.T) {
	started := metav1.NewTime(now)
	list := pods{{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"},
		Status: v1.PodStatus{Phase: v1.PodRunning, StartTime: &started, ContainerStatuses: []v1.ContainerStatus{{
			Name: "c", ContainerID: "containerd://c1", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: started}}}}}}}
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "nodekit_test_total"}))
	cfg := server.Config{Pods: list, Metrics: reg, Stats: &server.SummaryProvider{NodeName: "n1", Pods: list,
		Containers: stats{{Attributes: &runtimeapi.ContainerAttributes{Id: "c1"},
			Cpu:           &runtimeapi.CpuUsage{UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: 7}},
			Memory:        &runtimeapi.MemoryUsage{WorkingSetBytes: &runtimeapi.UInt64Value{Value: 4096}},
			WritableLayer: &runtimeapi.FilesystemUsage{UsedBytes: &runtimeapi.UInt64Value{Value: 8192}}}}}}
	h := mustNew(t, cfg)
	code, body := get(h, "/pods")
	assert.Equal(t, 200, code)
	assert.Contains(t, body, `"kind":"PodList"`)
	assert.Contains(t, body, `"phase":"Running"`)
	_, body = get(h, "/metrics")
	assert.Contains(t, body, "nodekit_test_total 0")
	_, body = get(h, "/stats/summary")
	assert.Contains(t, body, `"nodeName":"n1"`)
	assert.Contains(t, body, `"usageCoreNanoSeconds":7`)
	assert.Contains(t, body, `"workingSetBytes":4096`)
	assert.Contains(t, body, `"usedBytes":8192`, "the container's rootfs: its writable layer")
	code, _ = get(h, "/debug/pprof/")
	assert.Equal(t, 404, code, "debug handlers are off by default")
	cfg.EnableDebuggingHandlers = true
	code, _ = get(mustNew(t, cfg), "/debug/pprof/")
	assert.Equal(t, 200, code)
	code, _ = get(mustNew(t, server.Config{}), "/pods")
	assert.Equal(t, 404, code, "a part not configured is not served")
}

func mustNew(t *testing.T, cfg server.Config) *server.Handler {
	t.Helper()
	h, err := server.New(cfg)
	require.NoError(t, err)
	return h
}

func TestNewRejectsBadChecks(t *testing.T) {
	ok := func(context.Context) error { return nil }
	for _, tc := range []struct {
		cfg  server.Config
		want string
	}{
		{server.Config{Checks: []server.HealthCheck{{Name: "", Check: ok}}}, `Config.Checks[0].Name: Invalid value: ""`},
		{server.Config{Checks: []server.HealthCheck{{Name: "a/b", Check: ok}}}, `Config.Checks[0].Name: Invalid value: "a/b"`},
		{server.Config{Checks: []server.HealthCheck{{Name: "pleg", Check: ok}, {Name: "pleg", Check: ok}}}, `Config.Checks[1].Name: Duplicate value: "pleg"`},
		{server.Config{Checks: []server.HealthCheck{{Name: "pleg"}}}, `Config.Checks[0].Check is nil`},
		{server.Config{CheckTimeout: -time.Second}, `Config.CheckTimeout: Invalid value: -1s`},
		{server.Config{Logs: server.LogLocatorFunc(nil)}, `Config.Logs needs Config.Pods`},
	} {
		_, err := server.New(tc.cfg)
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}
}
