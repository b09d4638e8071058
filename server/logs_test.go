package server_test

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/websocket"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
)

// podSource is a PodLister whose pods a test changes.
type podSource struct {
	mu   sync.Mutex
	pods []v1.Pod
}

func (s *podSource) Pods() []v1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.pods)
}

func (s *podSource) set(pods ...v1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods = pods
}

func running(name, id string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, ContainerID: id,
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(now)}}}
}

func terminated(id string) *v1.ContainerStateTerminated {
	return &v1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", ContainerID: id}
}

// logsPod is default/web as its status says: c runs its second instance
// (c2; c1 terminated), done has terminated, t is a terminal for sessions.
func logsPod() v1.Pod {
	c := running("c", "containerd://c2")
	c.RestartCount, c.LastTerminationState.Terminated = 1, terminated("containerd://c1")
	return v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "u1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}, {Name: "t", TTY: true, Stdin: true}, {Name: "done"}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{c, running("t", "containerd://t1"),
			{Name: "done", ContainerID: "containerd://d1", State: v1.ContainerState{Terminated: terminated("containerd://d1")}}}}}
}

func runningPod(ns, name, container string) v1.Pod {
	return v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: "u-" + k8stypes.UID(name)},
		Spec:   v1.PodSpec{Containers: []v1.Container{{Name: container}}},
		Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{running(container, "containerd://"+name+"1")}}}
}

// logsPodWith is logsPod (with an init and an ephemeral container) whose
// status for cs's container is cs.
func logsPodWith(cs v1.ContainerStatus) v1.Pod {
	p := logsPod()
	p.Spec.InitContainers = []v1.Container{{Name: "init"}}
	p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug"}}}
	switch cs.Name {
	case "init":
		p.Status.InitContainerStatuses = []v1.ContainerStatus{cs}
	case "debug":
		p.Status.EphemeralContainerStatuses = []v1.ContainerStatus{cs}
	default:
		p.Status.ContainerStatuses[0] = cs
	}
	return p
}

func waiting(name, reason string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason}}}
}

// The kubelet's getContainerLogs finds the pod (404) and the container in
// its spec (404), then validateContainerLogStatus picks the instance from
// the pod's status or answers 400 with its message.
func TestContainerLogsChooseTheInstanceByThePodStatus(t *testing.T) {
	crashLooping := waiting("c", "CrashLoopBackOff")
	crashLooping.ContainerID, crashLooping.LastTerminationState.Terminated = "containerd://c1", terminated("containerd://c1")
	stillborn := v1.ContainerStatus{Name: "c", State: v1.ContainerState{Terminated: terminated("")}}
	all := "one\ntwo\nsplit-joined\nunfinish"
	for _, tc := range []struct {
		rule string
		pod  v1.Pod
		path string
		code int
		body string
	}{
		{"getContainerLogs: a pod not on the node is 404", logsPod(), "/containerLogs/default/nope/c", 404, `pod "nope" does not exist`},
		{"getContainerLogs: a container not in the spec is 404", logsPod(), "/containerLogs/default/web/x", 404, `container "x" not found in pod "web"`},
		{"validateContainerLogStatus: no status for the container", logsPodWith(v1.ContainerStatus{Name: "other"}), "/containerLogs/default/web/c", 400,
			`container "c" in pod "web" is not available`},
		{"validateContainerLogStatus: waiting, the reason said", logsPodWith(waiting("c", "ContainerCreating")), "/containerLogs/default/web/c", 400,
			`container "c" in pod "web" is waiting to start: ContainerCreating`},
		{"validateContainerLogStatus: ErrImagePull", logsPodWith(waiting("c", "ErrImagePull")), "/containerLogs/default/web/c", 400,
			`container "c" in pod "web" is waiting to start: image can't be pulled`},
		{"validateContainerLogStatus: ImagePullBackOff", logsPodWith(waiting("c", "ImagePullBackOff")), "/containerLogs/default/web/c", 400,
			`container "c" in pod "web" is waiting to start: trying and failing to pull image`},
		{"validateContainerLogStatus: no state at all", logsPodWith(v1.ContainerStatus{Name: "c"}), "/containerLogs/default/web/c", 400,
			`container "c" in pod "web" is waiting to start - no logs yet`},
		{"validateContainerLogStatus: previous with no terminated instance", logsPodWith(running("c", "containerd://c1")),
			"/containerLogs/default/web/c?previous=true", 400, `previous terminated container "c" in pod "web" not found`},
		{"validateContainerLogStatus: terminated with no container to read", logsPodWith(stillborn), "/containerLogs/default/web/c", 400,
			`container "c" in pod "web" is terminated`},
		{"validateContainerLogStatus: init containers' statuses", logsPodWith(waiting("init", "PodInitializing")),
			"/containerLogs/default/web/init", 400, `container "init" in pod "web" is waiting to start: PodInitializing`},
		{"validateContainerLogStatus: ephemeral containers' statuses", logsPodWith(running("debug", "containerd://e1")),
			"/containerLogs/default/web/debug", 200, all},
		{"validateContainerLogStatus: running, its own log", logsPod(), "/containerLogs/default/web/c", 200, all},
		{"validateContainerLogStatus: running, previous is the last terminated instance", logsPod(), "/containerLogs/default/web/c?previous=true", 200, "old\n"},
		{"validateContainerLogStatus: waiting after a crash, the last terminated instance", logsPodWith(crashLooping), "/containerLogs/default/web/c", 200, all},
		{"validateContainerLogStatus: previous while crash looping is the newest instance", logsPodWith(crashLooping),
			"/containerLogs/default/web/c?previous=true", 200, all},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			cfg := logsHandlerConfig(t, t.TempDir())
			cfg.Pods.(*podSource).set(tc.pod)
			code, body := get(mustNew(t, cfg), tc.path)
			assert.Equal(t, tc.code, code)
			assert.Equal(t, tc.body, body)
		})
	}
}

// followEnv is a follow of default/web's container c on a server whose pod
// statuses the test changes.
type followEnv struct {
	t    *testing.T
	dir  string
	pods *podSource
	body io.Reader
}

func (e *followEnv) appendLog(name, lines string) {
	f, err := os.OpenFile(filepath.Join(e.dir, name), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	require.NoError(e.t, err)
	_, err = f.WriteString(lines)
	require.NoError(e.t, errors.Join(err, f.Close()))
}

// expect reads exactly want from the response: it waits for the lines.
func (e *followEnv) expect(want string) {
	got := make([]byte, len(want))
	_, err := io.ReadFull(e.body, got)
	require.NoError(e.t, err, "got %q", got)
	require.Equal(e.t, want, string(got))
}

func (e *followEnv) setC(cs v1.ContainerStatus) {
	p := logsPod()
	p.Status.ContainerStatuses[0] = cs
	e.pods.set(p)
}

// The kubelet's ReadLogs with follow stops at the end of the file once the
// container is no longer running (waitLogs' isContainerRunning), and
// reopens the file the runtime writes at the path after a rotation.
func TestContainerLogsFollowEndsWithTheContainer(t *testing.T) {
	line := func(s string) string { return "2026-11-23T10:00:11Z stdout F " + s + "\n" }
	exited := running("c", "containerd://c2")
	exited.State = v1.ContainerState{Terminated: terminated("containerd://c2")}
	for _, tc := range []struct {
		rule string
		act  func(e *followEnv)
		want string
	}{
		{"ReadLogs: the follow ends once the container is no longer running, after what it wrote", func(e *followEnv) {
			e.appendLog("0.log", line("two"))
			e.setC(exited)
		}, "two\n"},
		{"ReadLogs: a restarted container is another container, whose follow ends", func(e *followEnv) {
			e.appendLog("0.log", line("two"))
			e.setC(running("c", "containerd://c3"))
		}, "two\n"},
		{"ReadLogs: the pod gone from the node ends the follow", func(e *followEnv) {
			e.appendLog("0.log", line("two"))
			e.pods.set()
		}, "two\n"},
		{"ReadLogs: after a rotation the new file at the path is read from its start", func(e *followEnv) {
			e.appendLog("0.log", line("two"))
			require.NoError(e.t, os.Rename(filepath.Join(e.dir, "0.log"), filepath.Join(e.dir, "0.log.20261123-100011")))
			e.appendLog("0.log", line("three"))
			e.expect("two\nthree\n")
			e.setC(exited)
		}, ""},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			dir := t.TempDir()
			cfg := logsHandlerConfig(t, dir)
			cfg.Clock = nil // the wall clock: these wait only for the response
			require.NoError(t, os.WriteFile(filepath.Join(dir, "0.log"), []byte(line("one")), 0o644))
			srv := httptest.NewServer(mustNew(t, cfg))
			defer func() { srv.CloseClientConnections(); srv.Close() }()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/containerLogs/default/web/c?follow=true", nil)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			e := &followEnv{t: t, dir: dir, pods: cfg.Pods.(*podSource), body: resp.Body}
			e.expect("one\n")
			tc.act(e)
			rest, err := io.ReadAll(resp.Body)
			require.NoError(t, err, "the follow must end by itself; got %q", rest)
			assert.Equal(t, tc.want, string(rest))
		})
	}
}

// wsLog reads a log over a WebSocket until the server closes it, decoding
// base64 messages; the API server's pods/log answers WebSockets this way.
func wsLog(t *testing.T, url string, protocols []string) (string, error) {
	cfg, err := websocket.NewConfig(url, "http://127.0.0.1/")
	require.NoError(t, err)
	cfg.Protocol = protocols
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, err := cfg.DialContext(ctx)
	if err != nil {
		return "", err
	}
	defer ws.Close()
	var out strings.Builder
	for {
		var msg []byte
		if err := websocket.Message.Receive(ws, &msg); err != nil {
			if errors.Is(err, io.EOF) {
				return out.String(), nil
			}
			return out.String(), err
		}
		if slices.Contains(protocols, "base64.binary.k8s.io") {
			msg, err = base64.StdEncoding.DecodeString(string(msg))
			require.NoError(t, err)
		}
		out.Write(msg)
	}
}

// A WebSocket request for a log gets it in the API server's pods/log
// protocols (its wsstream reader): binary.k8s.io (also when none is
// asked), base64.binary.k8s.io; a follow ends as over plain HTTP.
func TestContainerLogsOverWebSocket(t *testing.T) {
	srv := httptest.NewServer(mustNew(t, logsHandlerConfig(t, t.TempDir())))
	defer func() { srv.CloseClientConnections(); srv.Close() }()
	base := "ws" + strings.TrimPrefix(srv.URL, "http")
	all := "one\ntwo\nsplit-joined\nunfinish"
	for _, tc := range []struct {
		rule      string
		path      string
		protocols []string
		want      string
	}{
		{"StreamObject: no subprotocol is binary", "/containerLogs/default/web/c", nil, all},
		{"StreamObject: binary.k8s.io", "/containerLogs/default/web/c?tailLines=1", []string{"binary.k8s.io"}, "joined\nunfinish"},
		{"StreamObject: base64.binary.k8s.io", "/containerLogs/default/web/c?timestamps=true&limitBytes=35",
			[]string{"channel.k8s.io", "base64.binary.k8s.io"}, "2026-11-23T10:00:00.000000000Z one\n"},
		{"ReadLogs: a follow of a terminated container ends with its log", "/containerLogs/default/web/done?follow=true",
			[]string{"binary.k8s.io"}, "one\ntwo\nsplit-joined\n"},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			got, err := wsLog(t, base+tc.path, tc.protocols)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	req, _ := http.NewRequest("GET", srv.URL+"/containerLogs/default/web/c", nil)
	req.Header = http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}, "Sec-Websocket-Version": {"13"},
		"Sec-Websocket-Key": {"dGhlIHNhbXBsZSBub25jZQ=="}, "Sec-Websocket-Protocol": {"v5.channel.k8s.io"}}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, 400, resp.StatusCode)
	assert.Contains(t, string(body), `"v5.channel.k8s.io"`)
}

// kubelet getContainerLogs: a log is streamed chunked, never with a
// Content-Length, even when it is short and not followed: the API
// server's WebSocket wrapper for pods/log drops data that a read returns
// with EOF, which a whole short body is (upstream e2e: "Pods should
// support retrieving logs from the container over websockets").
func TestContainerLogsAreChunked(t *testing.T) {
	srv := httptest.NewServer(mustNew(t, logsHandlerConfig(t, t.TempDir())))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/containerLogs/default/web/c?tailLines=1")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, "joined\nunfinish", string(body))
	assert.Equal(t, int64(-1), resp.ContentLength)
	assert.Equal(t, []string{"chunked"}, resp.TransferEncoding)
}

// A WebSocket follow ends when its client goes, though no line comes.
func TestContainerLogsWebSocketFollowEndsWithTheClient(t *testing.T) {
	h := mustNew(t, logsHandlerConfig(t, t.TempDir()))
	served := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(served)
		h.ServeHTTP(w, r)
	}))
	defer func() { srv.CloseClientConnections(); srv.Close() }()
	cfg, err := websocket.NewConfig("ws"+strings.TrimPrefix(srv.URL, "http")+"/containerLogs/default/web/c?follow=true&tailLines=1", "http://127.0.0.1/")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, err := cfg.DialContext(ctx)
	require.NoError(t, err)
	var got []byte
	for string(got) != "joined\n" { // an empty first message, then the line
		var msg []byte
		require.NoError(t, websocket.Message.Receive(ws, &msg))
		got = append(got, msg...)
	}
	require.NoError(t, ws.Close())
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		t.Fatal("the follow went on after its client closed the WebSocket")
	}
}
