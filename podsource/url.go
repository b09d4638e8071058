package podsource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/clock"
)

// URLConfig configures a URLSource.
type URLConfig struct {
	// URL is polled for a Pod or PodList (--manifest-url). Required.
	URL string
	// Header is sent with each request (--manifest-url-header).
	Header http.Header
	// NodeName is required.
	NodeName string
	// Name is the source's name in the mux. Default "http".
	Name string
	// CheckPeriod is the poll period (--http-check-frequency). Default 20s.
	CheckPeriod time.Duration
	// Client defaults to an http.Client with the kubelet's 10s timeout.
	Client *http.Client
	// MaxBodyBytes caps a response body. Default 10 MiB.
	MaxBodyBytes int64
	Strict       bool
	Clock        clock.WithTicker
	Log          logr.Logger
	Metrics      *Metrics
}

// URLSource polls a URL (--manifest-url) every CheckPeriod (20s,
// --http-check-frequency) with optional headers; the body is a Pod or a
// PodList, YAML or JSON. A failed fetch or an unusable body keeps the last
// good set; an empty body is an empty set (as the kubelet). When an item of
// its PodList becomes invalid, that pod (keyed by namespace/name) keeps its
// last good version, where the kubelet drops it; valid items keep flowing.
type URLSource struct {
	cfg  URLConfig
	sink Sink
	log  logr.Logger

	pollMu   sync.Mutex         // serializes Poll
	mu       sync.Mutex         // guards lastErr
	last     map[string]*v1.Pod // manifest key -> last good pod
	lastErr  error
	sent     bool
	lastSet  []*v1.Pod
	lastBody []byte // the body last parsed and sent: the same bytes again change nothing
	failing  string // the fetch error last logged, so that an outage is logged once
}

// NewURLSource returns a URLSource sending to sink.
func NewURLSource(cfg URLConfig, sink Sink) (*URLSource, error) {
	if cfg.URL == "" {
		return nil, errors.New("podsource: URLConfig.URL is required")
	}
	if cfg.NodeName == "" {
		return nil, errors.New("podsource: URLConfig.NodeName is required")
	}
	if cfg.Name == "" {
		cfg.Name = SourceHTTP
	}
	if cfg.CheckPeriod <= 0 {
		cfg.CheckPeriod = DefaultHTTPCheckFrequency
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 10 << 20
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &URLSource{cfg: cfg, sink: sink, log: cfg.Log.WithValues("source", cfg.Name, "url", cfg.URL), last: map[string]*v1.Pod{}}, nil
}

// Name is the source's name in the mux.
func (s *URLSource) Name() string { return s.cfg.Name }

// Err is the error of the last poll (nil if it succeeded): a fetch error,
// or a *ManifestError for the body or for its first invalid pod.
func (s *URLSource) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

// Run polls at once, then every CheckPeriod, until ctx ends.
func (s *URLSource) Run(ctx context.Context) error {
	ticker := s.cfg.Clock.NewTicker(s.cfg.CheckPeriod)
	defer ticker.Stop()
	for {
		err := s.Poll(ctx)
		var me *ManifestError
		switch {
		case ctx.Err() != nil:
		case err != nil && !errors.As(err, &me):
			// Logged when it starts or changes, not every CheckPeriod.
			if msg := err.Error(); msg != s.failing {
				s.log.Error(err, "Manifest URL poll failed; keeping the last good set")
				s.failing = msg
			}
		case s.failing != "":
			s.log.Info("Manifest URL answers again")
			s.failing = ""
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}

// Poll fetches the URL once and sends the set if it changed. Errors keep
// the last good set.
func (s *URLSource) Poll(ctx context.Context) error {
	s.pollMu.Lock()
	defer s.pollMu.Unlock()
	body, err := s.fetch(ctx)
	if err != nil {
		s.cfg.Metrics.fetchError(s.cfg.Name)
		s.setErr(err)
		return err
	}
	if len(body) == 0 {
		// As the kubelet: an empty body is an empty set (and marks the
		// source seen), reported as an error all the same.
		err := fmt.Errorf("podsource: zero-length data received from %s", s.cfg.URL)
		s.setErr(err)
		s.last = map[string]*v1.Pod{}
		s.lastBody = nil
		return errors.Join(err, s.sendSet(ctx, nil))
	}
	if s.sent && s.lastBody != nil && bytes.Equal(body, s.lastBody) {
		// Unchanged: nothing to send, nothing new to log.
		return s.Err()
	}
	parsed, err := Parse(body, ParseOptions{Kind: SourceHTTP, Origin: s.cfg.URL, NodeName: s.cfg.NodeName, Strict: s.cfg.Strict, AllowList: true})
	if err != nil {
		s.cfg.Metrics.invalidManifest(s.cfg.Name)
		s.log.Error(err, "Invalid manifest body; keeping the last good set")
		s.setErr(err)
		return err
	}
	next := make(map[string]*v1.Pod, len(parsed))
	uids := make(map[string]string, len(parsed)) // UID -> key of the first pod with it
	var firstErr error
	for _, p := range parsed {
		if p.Err != nil {
			s.cfg.Metrics.invalidManifest(s.cfg.Name)
			if firstErr == nil {
				firstErr = p.Err
			}
			if old, ok := s.last[p.Key]; ok {
				s.log.Error(p.Err, "Invalid pod; keeping its last good version", "pod", p.Key)
				next[p.Key] = old
			} else {
				s.log.Error(p.Err, "Invalid pod; skipped", "pod", p.Key)
			}
			continue
		}
		if _, dup := next[p.Key]; dup {
			// Keep the first; the mux would report it as a conflict anyway.
			s.log.Error(nil, "Duplicate pod in manifest; keeping the first", "pod", p.Key)
			continue
		}
		if first, dup := uids[string(p.Pod.UID)]; dup {
			s.log.Error(nil, "Two pods in the manifest have one UID; keeping the first", "pod", p.Key, "podUID", p.Pod.UID, "first", first)
			s.cfg.Metrics.conflict(s.cfg.Name)
			continue
		}
		uids[string(p.Pod.UID)] = p.Key
		// Reuse the previous object when unchanged, so the mux skips it fast.
		if old, ok := s.last[p.Key]; ok && old.UID == p.Pod.UID && !podsDifferSemantically(old, p.Pod) &&
			equality.Semantic.DeepEqual(old.Status, p.Pod.Status) {
			next[p.Key] = old
			continue
		}
		next[p.Key] = p.Pod
	}
	s.setErr(firstErr)
	s.last = next
	keys := make([]string, 0, len(next))
	for k := range next {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	pods := make([]*v1.Pod, 0, len(keys))
	for _, k := range keys {
		pods = append(pods, next[k])
	}
	if err := s.sendSet(ctx, pods); err != nil {
		return err
	}
	s.lastBody = body
	return firstErr
}

func (s *URLSource) sendSet(ctx context.Context, pods []*v1.Pod) error {
	if s.sent && samePointers(s.lastSet, pods) {
		return nil
	}
	if err := s.sink.Update(ctx, PodUpdate{Op: SET, Pods: pods, Source: s.cfg.Name}); err != nil {
		return err
	}
	s.sent, s.lastSet = true, pods
	return nil
}

func samePointers(a, b []*v1.Pod) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (s *URLSource) setErr(err error) {
	s.mu.Lock()
	s.lastErr = err
	s.mu.Unlock()
}

func (s *URLSource) fetch(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.cfg.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("podsource: manifest URL %s: %w", s.cfg.URL, err)
	}
	for k, vs := range s.cfg.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("podsource: manifest URL %s: %w", s.cfg.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("podsource: manifest URL %s: %s", s.cfg.URL, statusError(resp))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, s.cfg.MaxBodyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("podsource: manifest URL %s: reading body: %w", s.cfg.URL, err)
	}
	if int64(len(body)) > s.cfg.MaxBodyBytes {
		return nil, fmt.Errorf("podsource: manifest URL %s: body larger than %d bytes", s.cfg.URL, s.cfg.MaxBodyBytes)
	}
	return body, nil
}

// statusError describes a non-200 answer: "HTTP 500 Internal Server Error"
// and the start of the body, if any, which is where servers say why.
func statusError(resp *http.Response) string {
	status := resp.Status // "500 Internal Server Error"; some servers send no reason
	if text := http.StatusText(resp.StatusCode); text != "" && !strings.Contains(status, text) {
		status = fmt.Sprintf("%d %s", resp.StatusCode, text)
	}
	msg := "HTTP " + status
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	body := strings.Join(strings.Fields(strings.ToValidUTF8(string(head), "?")), " ")
	if len(body) > 200 {
		body = body[:200] + "..."
	}
	if body != "" {
		msg += ": " + strconv.Quote(body)
	}
	return msg
}
