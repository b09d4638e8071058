package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

func TestRunInstantModes(t *testing.T) {
	for _, tc := range []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{args: []string{"echo", "hi"}, stdout: "hi\n"},
		{args: []string{"echo", "a", "b  c"}, stdout: "a b  c\n"},
		{args: []string{"echo"}, stdout: "\n"},
		{args: []string{"exit"}, stdout: "exiting with 0\n"},
		{args: []string{"exit", "3"}, code: 3, stdout: "exiting with 3\n"},
		{args: []string{"exit", "x"}, code: 2, stderr: "testbin: exit: bad N \"x\"\n"},
		{args: []string{"stderr", "oops", "now"}, stderr: "oops now\n"},
		{args: []string{"sleep", "0.01"}},
		{args: []string{"alloc"}, code: 2, stderr: "testbin: alloc: MB is required\n"},
		{args: []string{"spew"}, code: 2, stderr: "testbin: spew: MB is required\n"},
		{args: []string{"spew", "1", "0"}, code: 2, stderr: "testbin: spew: bad KIBPS \"0\"\n"},
		{args: []string{"bogus"}, code: 2, stderr: "testbin: unknown mode \"bogus\"\n"},
	} {
		var out, errb bytes.Buffer
		code := run(tc.args, strings.NewReader(""), &out, &errb)
		if code != tc.code || out.String() != tc.stdout || errb.String() != tc.stderr {
			t.Errorf("run(%q) = %d, stdout %q, stderr %q; want %d, %q, %q",
				tc.args, code, out.String(), errb.String(), tc.code, tc.stdout, tc.stderr)
		}
	}
}

func get(t *testing.T, base, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestServeHandler(t *testing.T) {
	s := newServer(0)
	exited := make(chan int, 1)
	s.exit = func(code int) { exited <- code }
	ts := httptest.NewServer(s.handler())
	defer ts.Close()

	steps := []struct {
		path string
		code int
		body string
	}{
		{"/healthz", 200, "ok"},
		{"/healthz/fail", 200, "ok"},
		{"/healthz", 500, "unhealthy"},
		{"/healthz/ok", 200, "ok"},
		{"/healthz", 200, "ok"},
		{"/readyz", 200, "ready"},
		{"/readyz/fail", 200, "ok"},
		{"/readyz", 503, "not ready"},
		{"/readyz/ok", 200, "ok"},
		{"/readyz", 200, "ready"},
		{"/exit?code=7", 200, "exiting with 7"},
	}
	for _, st := range steps {
		if code, body := get(t, ts.URL, st.path); code != st.code || body != st.body {
			t.Errorf("GET %s = %d %q, want %d %q", st.path, code, body, st.code, st.body)
		}
	}
	select {
	case c := <-exited:
		if c != 7 {
			t.Errorf("exit code %d, want 7", c)
		}
	case <-time.After(2 * time.Second):
		t.Error("/exit did not exit")
	}
}

func TestUnhealthyAfter(t *testing.T) {
	s := newServer(time.Hour)
	ts := httptest.NewServer(s.handler())
	defer ts.Close()
	if code, _ := get(t, ts.URL, "/healthz"); code != 200 {
		t.Errorf("healthz before UNHEALTHY_AFTER = %d, want 200", code)
	}
	// UNHEALTHY_AFTER passes: the server started an hour ago.
	s.mu.Lock()
	s.start = s.start.Add(-time.Hour)
	s.mu.Unlock()
	if code, _ := get(t, ts.URL, "/healthz"); code != 500 {
		t.Errorf("healthz after UNHEALTHY_AFTER = %d, want 500", code)
	}
	get(t, ts.URL, "/healthz/ok")
	if code, _ := get(t, ts.URL, "/healthz"); code != 200 {
		t.Errorf("healthz after /healthz/ok = %d, want 200", code)
	}
}

func TestCat(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"lines", "a\nb\n"},
		{"no final newline", "a\nb"},
		{"empty", ""},
	} {
		var out, errb bytes.Buffer
		if code := run([]string{"cat"}, strings.NewReader(tc.in), &out, &errb); code != 0 || out.String() != tc.in || errb.Len() > 0 {
			t.Errorf("%s: cat = %d, stdout %q, stderr %q; want 0, %q, \"\"", tc.name, code, out.String(), errb.String(), tc.in)
		}
	}
}

func TestTTY(t *testing.T) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	for _, tc := range []struct {
		name  string
		stdin io.Reader
	}{
		{"pipe-like reader", strings.NewReader("x")},
		{"/dev/null", null},
	} {
		var out bytes.Buffer
		if code := run([]string{"tty"}, tc.stdin, &out, io.Discard); code != 1 || out.String() != "not a tty\n" {
			t.Errorf("%s: tty = %d, %q; want 1, \"not a tty\\n\"", tc.name, code, out.String())
		}
	}

	// The master side of a new pty is a terminal too, and needs no
	// controlling terminal, which tests usually lack.
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("no pty to test tty with (/dev/ptmx): %v", err)
	}
	defer ptmx.Close()
	var out bytes.Buffer
	if code := run([]string{"tty"}, ptmx, &out, io.Discard); code != 0 || !strings.HasPrefix(out.String(), "/dev/") {
		t.Errorf("tty on a pty = %d, %q; want 0, a /dev/ name", code, out.String())
	}
}

func TestSpew(t *testing.T) {
	var out bytes.Buffer
	spew(&out, 1, 0)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if got, want := len(lines), (1<<20)/100+1; got != want {
		t.Fatalf("%d lines, want %d", got, want)
	}
	if lines[0] != "000000001 "+strings.Repeat("x", 89) || lines[len(lines)-1] != "spewed 1 MiB" {
		t.Errorf("first line %q, last %q", lines[0], lines[len(lines)-1])
	}
}
