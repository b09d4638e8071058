package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// containerLogs serves /containerLogs/<namespace>/<pod>/<container> from
// the CRI log file of the container's newest instance: each line's message
// (the CRI format is "<time> <stream> <tag> <message>", tag P for a line
// the runtime split, F for its end), the last tailLines lines if asked,
// and with follow=true new lines as they are written until the client goes
// away. A last line still being written is printed as far as it goes by a
// plain read, as the kubelet does, and completed by a follow.
func (a *agent) containerLogs(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/containerLogs/"), "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		http.Error(w, "path must be /containerLogs/<namespace>/<pod>/<container>", http.StatusBadRequest)
		return
	}
	ns, podName, container := parts[0], parts[1], parts[2]
	tail := -1
	if v := r.URL.Query().Get("tailLines"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			http.Error(w, "tailLines: invalid value "+strconv.Quote(v)+": must be a non-negative integer", http.StatusBadRequest)
			return
		}
		tail = n
	}
	follow := r.URL.Query().Get("follow") == "true"
	path, err := a.logPath(r.Context(), ns, podName, container)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	f, err := os.Open(path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	rd := bufio.NewReader(f)
	var lines []string
	var partial string // the unfinished last line, without its end yet
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			partial = line
			break
		}
		lines = append(lines, criMessage(line))
		if tail >= 0 && len(lines) > tail {
			lines = lines[1:]
		}
	}
	for _, l := range lines {
		_, _ = io.WriteString(w, l)
	}
	if !follow {
		if partial != "" && tail != 0 {
			_, _ = io.WriteString(w, criMessage(partial))
		}
		return
	}
	flusher, _ := w.(http.Flusher)
	for {
		if flusher != nil {
			flusher.Flush()
		}
		line, err := rd.ReadString('\n')
		partial += line
		if err == nil {
			_, _ = io.WriteString(w, criMessage(partial))
			partial = ""
			continue
		}
		if !errors.Is(err, io.EOF) {
			return
		}
		// At the end for now: wait for more (bufio reads the file again).
		select {
		case <-r.Context().Done():
			return
		case <-a.clock.After(100 * time.Millisecond):
		}
	}
}

// criMessage strips the CRI log prefix "<time> <stream> <tag> " from a
// line; a partial (P) line's message goes on in the next line, so it loses
// its newline.
func criMessage(line string) string {
	fields := strings.SplitN(line, " ", 4)
	if len(fields) < 4 {
		return line
	}
	if fields[2] == "P" {
		return strings.TrimSuffix(fields[3], "\n")
	}
	return fields[3]
}

func (a *agent) logPath(ctx context.Context, ns, podName, container string) (string, error) {
	a.mu.Lock()
	var uid string
	for id, w := range a.workers {
		if p := w.spec(); p.Namespace == ns && p.Name == podName {
			uid = string(id)
		}
	}
	a.mu.Unlock()
	if uid == "" {
		return "", errors.New("pod " + ns + "/" + podName + " not found")
	}
	st, err := a.mgr.GetPodStatus(ctx, types.UID(uid), podName, ns)
	if err != nil {
		return "", err
	}
	cs := st.FindContainerStatusByName(container)
	if cs == nil {
		return "", errors.New("container " + container + " of pod " + ns + "/" + podName + " not found")
	}
	resp, err := a.criClient.ContainerStatus(ctx, cs.ID, false)
	if err != nil {
		return "", err
	}
	// The runtime's word, but served only from --pod-logs-dir.
	path := resp.Status.LogPath
	if rel, err := filepath.Rel(a.layout.Logs(), path); err != nil || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("container %s of pod %s/%s: log file %q is outside --pod-logs-dir %s", container, ns, podName, path, a.layout.Logs())
	}
	return path, nil
}
