package server_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodekit-dev/nodekit/server"
)

// FuzzRequests sends arbitrary paths and queries to the node API's
// parsing (logs, exec, attach, port-forward, run) with providers that do
// not fail: every answer is a success or a clear 4xx, never a panic or a
// 5xx, and an error says what was wrong.
func FuzzRequests(f *testing.F) {
	for _, seed := range []string{
		"/containerLogs/default/web/c?tailLines=99999999999999999999",
		"/containerLogs/default/web/c?tailLines=-1&limitBytes=0",
		"/containerLogs/default/web/c?sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z",
		"/containerLogs/default/web/c?follow=maybe",
		"/containerLogs/default/web/c?tailLines=9223372036854775807&timestamps=true",
		"/containerLogs/default/web",
		"/exec/default/web/c?command=ls&output=1",
		"/exec/default/web/u1/c/x?command=ls",
		"/attach/default/nope/c?input=1",
		"/portForward/default/web?port=99999",
		"/run/default/web/c?cmd=%20%20",
		"/exec/%2e%2e/web/c",
	} {
		f.Add("POST", seed)
		f.Add("GET", seed)
	}
	h := logsHandlerWithStreams(f)
	f.Fuzz(func(t *testing.T, method, target string) {
		if !strings.HasPrefix(target, "/") || strings.ContainsAny(target, " \r\n#") {
			return // not a request line a client can send
		}
		for _, prefix := range []string{"/containerLogs/", "/exec/", "/attach/", "/portForward/", "/run/"} {
			if strings.HasPrefix(target, prefix) {
				break
			}
			if prefix == "/run/" {
				return
			}
		}
		req, err := http.NewRequest(method, "http://node"+target, nil)
		if err != nil || req.URL.Path == "" {
			return
		}
		if follow, _ := strconv.ParseBool(req.URL.Query().Get("follow")); follow {
			return // a follow ends only with the client (the fake clock never ticks)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		assert.Less(t, rec.Code, 500, "%s %s: %s", method, target, rec.Body.String())
		if rec.Code >= 400 {
			assert.NotEmpty(t, strings.TrimSpace(rec.Body.String()), "an error says why")
		}
	})
}

func logsHandlerWithStreams(f *testing.F) *server.Handler {
	logs := logsHandlerConfig(f, f.TempDir())
	logs.Streams = &streamBackend{}
	h, err := server.New(logs)
	require.NoError(f, err)
	return h
}
