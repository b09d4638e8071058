package podsource

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/internal/poll"
)

// server serves whatever body/status is set, on 127.0.0.1.
type server struct {
	mu      sync.Mutex
	status  int
	body    string
	headers []http.Header
	srv     *httptest.Server
}

func newServer(t *testing.T) *server {
	s := &server{status: 200}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.headers = append(s.headers, r.Header.Clone())
		w.WriteHeader(s.status)
		_, _ = w.Write([]byte(s.body))
	}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s.srv.Listener = l
	s.srv.Start()
	t.Cleanup(s.srv.Close)
	return s
}

func (s *server) set(status int, body string) {
	s.mu.Lock()
	s.status, s.body = status, body
	s.mu.Unlock()
}

const podList = `apiVersion: v1
kind: PodList
items:
- metadata: {name: a}
  spec: {containers: [{name: c, image: "i:1"}]}
- metadata: {name: b}
  spec: {containers: [{name: c, image: "i:1"}]}
`

func TestURLSource(t *testing.T) {
	ctx := context.Background()
	srv := newServer(t)
	metrics := NewMetrics()
	m := NewMux(MuxConfig{Metrics: metrics})
	src, err := NewURLSource(URLConfig{URL: srv.srv.URL + "/pods", NodeName: node, Metrics: metrics,
		Header: http.Header{"Authorization": {"Bearer t"}, "X-Node": {"n1"}}}, m)
	require.NoError(t, err)
	m.Register(src.Name())

	steps := []struct {
		name    string
		status  int
		body    string
		wantErr bool
		want    []emitted
	}{
		{"single pod", 200, manifest("a", "i:1"), false, []emitted{{ADD, "http", []string{"a-node-1"}}}},
		{"same again: nothing", 200, manifest("a", "i:1"), false, []emitted{}},
		{"pod list", 200, podList, false, []emitted{{ADD, "http", []string{"b-node-1"}}}},
		{"server error keeps last good", 500, "oops", true, []emitted{}},
		{"garbage keeps last good", 200, "{not json", true, []emitted{}},
		{"wrong kind keeps last good", 200, "apiVersion: v1\nkind: Secret\n", true, []emitted{}},
		{"one invalid item keeps its last good version", 200, `apiVersion: v1
kind: PodList
items:
- metadata: {name: a}
  spec: {containers: [{name: c, image: "i:2"}]}
- metadata: {name: b}
  spec: {containers: [{name: c}]}
- metadata: {name: new}
  spec: {containers: [{name: "bad name"}]}
`, true, []emitted{{REMOVE, "http", []string{"a-node-1"}}, {ADD, "http", []string{"a-node-1"}}}},
		{"recovered", 200, podList, false, []emitted{{REMOVE, "http", []string{"a-node-1"}}, {ADD, "http", []string{"a-node-1"}}}},
		{"pod removed from list", 200, manifest("b", "i:1"), false, []emitted{{REMOVE, "http", []string{"a-node-1"}}}},
		{"empty body is an empty set", 200, "", true, []emitted{{REMOVE, "http", []string{"b-node-1"}}}},
	}
	for _, st := range steps {
		srv.set(st.status, st.body)
		err := src.Poll(ctx)
		if st.wantErr {
			assert.Error(t, err, st.name)
			assert.Error(t, src.Err(), st.name)
		} else {
			assert.NoError(t, err, st.name)
		}
		assert.Equal(t, st.want, summarize(drain(m)), st.name)
		if st.name == "single pod" {
			assert.True(t, m.AllSourcesReady())
		}
	}
	srv.mu.Lock()
	for _, h := range srv.headers {
		assert.Equal(t, "Bearer t", h.Get("Authorization"))
		assert.Equal(t, "n1", h.Get("X-Node"))
	}
	srv.mu.Unlock()
	assert.Equal(t, 1.0, testutil.ToFloat64(metrics.fetchErrs.WithLabelValues("http")), "the 500")
	assert.Equal(t, 4.0, testutil.ToFloat64(metrics.invalid.WithLabelValues("http")))
}

func TestURLSourceErrorBeforeFirstSuccess(t *testing.T) {
	srv := newServer(t)
	srv.set(404, "")
	m := NewMux(MuxConfig{})
	src, err := NewURLSource(URLConfig{URL: srv.srv.URL, NodeName: node}, m)
	require.NoError(t, err)
	m.Register(src.Name())
	err = src.Poll(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), srv.srv.URL)
	assert.Contains(t, err.Error(), "404")
	assert.False(t, m.AllSourcesReady(), "a failed fetch is not a delivered set")
}

func TestURLSourceRunStops(t *testing.T) {
	srv := newServer(t)
	srv.set(200, manifest("a", "i"))
	m := NewMux(MuxConfig{})
	src, err := NewURLSource(URLConfig{URL: srv.srv.URL, NodeName: node}, m)
	require.NoError(t, err)
	m.Register(src.Name())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- src.Run(ctx) }()
	u := <-m.Updates()
	assert.Equal(t, ADD, u.Op)
	assert.Equal(t, []string{"a-node-1"}, names(u.Pods))
	cancel()
	assert.NoError(t, <-done)
}

// TestURLSourceStatusError: a failed answer is reported once as the
// server put it, with what the body says, not "500 Internal Server Error:
// Internal Server Error".
func TestURLSourceStatusError(t *testing.T) {
	srv := newServer(t)
	m := NewMux(MuxConfig{})
	src, err := NewURLSource(URLConfig{URL: srv.srv.URL, NodeName: node}, m)
	require.NoError(t, err)
	m.Register(src.Name())
	for _, tc := range []struct {
		status int
		body   string
		want   string
	}{
		{500, "oops\n", `: HTTP 500 Internal Server Error: "oops"`},
		{503, "", ": HTTP 503 Service Unavailable"},
		{404, "no such\n\n  manifest", `: HTTP 404 Not Found: "no such manifest"`},
		{599, "", ": HTTP 599 status code 599"},
	} {
		srv.set(tc.status, tc.body)
		err := src.Poll(context.Background())
		require.Error(t, err)
		assert.Equal(t, "podsource: manifest URL "+srv.srv.URL+tc.want, err.Error())
	}
}

// TestURLSourceLogsOncePerChange: an outage, an invalid item and two pods
// with one UID are logged when they start, not at every poll.
func TestURLSourceLogsOncePerChange(t *testing.T) {
	srv := newServer(t)
	var logs logLines
	clk := clocktesting.NewFakeClock(time.Now())
	m := NewMux(MuxConfig{Buffer: 100})
	src, err := NewURLSource(URLConfig{URL: srv.srv.URL, NodeName: node, Clock: clk, Log: logs.logger()}, m)
	require.NoError(t, err)
	m.Register(src.Name())
	srv.set(200, `apiVersion: v1
kind: PodList
items:
- metadata: {name: a, uid: one-uid}
  spec: {containers: [{name: c, image: "i:1"}]}
- metadata: {name: b, uid: one-uid}
  spec: {containers: [{name: c, image: "i:1"}]}
- metadata: {name: bad}
  spec: {containers: [{name: c}]}
`)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- src.Run(ctx) }()
	requests := func() int {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return len(srv.headers)
	}
	// polls steps through n periods; Run polls in sequence, so when the
	// n-th request arrives the polls before it are done.
	polls := func(n int) {
		for range n {
			before := requests()
			poll.Eventually(t, func() bool { clk.Step(DefaultHTTPCheckFrequency); return requests() > before }, 5*time.Second, time.Millisecond)
		}
	}
	poll.Eventually(t, func() bool { return requests() == 1 }, 5*time.Second, time.Millisecond)
	polls(4)
	assert.Equal(t, 1, logs.with("Two pods in the manifest have one UID", "default/b", "one-uid"), strings.Join(logs.lines, "\n"))
	assert.Equal(t, 1, logs.with("Invalid pod; skipped", "default/bad"))
	srv.set(500, "down")
	polls(4)
	assert.Equal(t, 1, logs.with("Manifest URL poll failed", `HTTP 500 Internal Server Error: \"down\"`), strings.Join(logs.lines, "\n"))
	srv.set(200, manifest("a", "i:1"))
	polls(2)
	assert.Equal(t, 1, logs.with("Manifest URL answers again"))
	cancel()
	require.NoError(t, <-done)
}
