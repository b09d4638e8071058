package nodeagent_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodekit-dev/nodekit/internal/poll"
)

// TestContainerLogsFollowKeepsPartialLine: a follow that starts while the
// last line is still being written prints that line whole once it ends
// (it printed only "-END"), and a runtime-split (P) line joins the next.
func TestContainerLogsFollowKeepsPartialLine(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(
		"apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - {name: c, image: nodekit.local/testbin:1, args: [sleep]}\n"), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := startFakeAgent(t, ctx, dir)
	poll.Eventually(t, running(a.Agent, "web-n1"), 20*time.Second, 20*time.Millisecond, "web running")
	path, err := a.LogPath(ctx, "default", "web-n1", "c", false)
	require.NoError(t, err)
	appendLog := func(s string) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		require.NoError(t, err)
		_, err = f.WriteString(s)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	appendLog("2026-11-23T10:00:00.000000000Z stdout F before\n2026-11-23T10:00:01.000000000Z stdout F PARTIAL-START")

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: a.APIHandler()}}
	srv.Start()
	defer srv.Close()

	// A plain read shows the unfinished line as far as it goes.
	resp, err := http.Get(srv.URL + "/containerLogs/default/web-n1/c")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, "before\nPARTIAL-START", string(body))

	fctx, fcancel := context.WithCancel(ctx)
	defer fcancel()
	req, err := http.NewRequestWithContext(fctx, "GET", srv.URL+"/containerLogs/default/web-n1/c?follow=true&tailLines=0", nil)
	require.NoError(t, err)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	lines := make(chan string, 10)
	go func() {
		defer close(lines)
		rd := bufio.NewReader(resp.Body)
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				return
			}
			lines <- line
		}
	}()
	// The handler flushes its headers only after its first read, which
	// stopped in the unfinished line: the rest comes now.
	appendLog("-END\n2026-11-23T10:00:02.000000000Z stdout P split-\n2026-11-23T10:00:02.000000000Z stdout F joined\n")
	for _, want := range []string{"PARTIAL-START-END\n", "split-joined\n"} {
		select {
		case got := <-lines:
			assert.Equal(t, want, got)
		case <-time.After(10 * time.Second):
			t.Fatalf("follow did not print %q", want)
		}
	}
	fcancel()
}
