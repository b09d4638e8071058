package containerlog

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The kubelet's names: a rotated log is <log>.<timestamp>, compressed
// <log>.<timestamp>.gz, written through <log>.<timestamp>.tmp.
const (
	// TimestampLayout is the layout of a rotated log's suffix, in the
	// clock's local time (time.Time.Format).
	TimestampLayout = "20060102-150405"
	compressSuffix  = ".gz"
	tmpSuffix       = ".tmp"
)

// AllLogs returns the files of the log at path, oldest first: its rotated
// files in use (compressed or not), then path itself, as the kubelet's
// GetAllLogs, for a reader that reads across rotations. Leftovers of an
// interrupted rotation are not listed.
func AllLogs(path string) ([]string, error) {
	rotated, err := rotatedLogs(path)
	if err != nil {
		return nil, err
	}
	inuse, _ := filterUnusedLogs(rotated)
	sort.Strings(inuse)
	return append(inuse, path), nil
}

// RemoveLogs removes the log at path and every file whose name starts with
// it (rotated, compressed, temporary), as the kubelet's Clean does when
// the container is removed. Files already gone are not an error; "" is
// nothing to remove.
func RemoveLogs(path string) error {
	if path == "" {
		return nil
	}
	files, err := filesWithPrefix(path, filepath.Base(path))
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range files {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("failed to remove log %q: %w", f, err))
		}
	}
	return errors.Join(errs...)
}

// rotatedLogs are the files the kubelet's glob <log>.* matches.
func rotatedLogs(log string) ([]string, error) {
	return filesWithPrefix(log, filepath.Base(log)+".")
}

// filesWithPrefix lists the files beside log whose names start with
// prefix, sorted. The directory is read rather than globbed, so that a
// path with glob metacharacters is not taken for a pattern; a missing
// directory has none.
func filesWithPrefix(log, prefix string) ([]string, error) {
	dir := filepath.Dir(log)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to list all log files with pattern %q: %w", filepath.Join(dir, prefix)+"*", err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out, nil
}

// rotateLog is the kubelet's rotateLog.
func (m *Manager) rotateLog(ctx context.Context, id, log string) error {
	logs, err := rotatedLogs(log)
	if err != nil {
		return err
	}
	if logs, err = cleanupUnusedLogs(logs); err != nil {
		return fmt.Errorf("failed to cleanup logs: %w", err)
	}
	if logs, err = removeExcessLogs(logs, m.cfg.MaxFiles); err != nil {
		return fmt.Errorf("failed to remove excess logs: %w", err)
	}
	for _, l := range logs {
		if strings.HasSuffix(l, compressSuffix) {
			continue
		}
		if err := compressLog(l); err != nil {
			return fmt.Errorf("failed to compress log %q: %w", l, err)
		}
	}
	if err := m.rotateLatestLog(ctx, id, log); err != nil {
		return fmt.Errorf("failed to rotate log %q: %w", log, err)
	}
	return nil
}

// cleanupUnusedLogs removes what an interrupted rotation left behind and
// returns the rest.
func cleanupUnusedLogs(logs []string) ([]string, error) {
	inuse, unused := filterUnusedLogs(logs)
	for _, l := range unused {
		if err := os.Remove(l); err != nil {
			return nil, fmt.Errorf("failed to remove unused log %q: %w", l, err)
		}
	}
	return inuse, nil
}

// filterUnusedLogs splits rotated files into those in use and those left
// by an interrupted rotation: .tmp files, and uncompressed files whose
// .gz exists (the compression finished, the removal did not).
func filterUnusedLogs(logs []string) (inuse, unused []string) {
	compressed := make(map[string]bool, len(logs))
	for _, l := range logs {
		if strings.HasSuffix(l, compressSuffix) {
			compressed[strings.TrimSuffix(l, compressSuffix)] = true
		}
	}
	for _, l := range logs {
		if strings.HasSuffix(l, tmpSuffix) || compressed[l] {
			unused = append(unused, l)
		} else {
			inuse = append(inuse, l)
		}
	}
	return inuse, unused
}

// removeExcessLogs removes the oldest rotated files until MaxFiles-2 are
// left: with the file about to be rotated and the new live one, that
// makes MaxFiles. Oldest first, so as not to break a reader that is
// reading them in order.
func removeExcessLogs(logs []string, maxFiles int) ([]string, error) {
	sort.Strings(logs) // the timestamp layout sorts by time
	keep := max(maxFiles-2, 0)
	i := 0
	for ; i < len(logs)-keep; i++ {
		if err := os.Remove(logs[i]); err != nil {
			return nil, fmt.Errorf("failed to remove old log %q: %w", logs[i], err)
		}
	}
	return logs[i:], nil
}

// compressLog compresses log to log.gz through log.gz's .tmp, and removes
// log. Unlike the kubelet, the gzip stream's and the file's Close errors
// are checked: a full disk must not replace a log with a truncated
// archive.
func compressLog(log string) error {
	info, err := os.Stat(log)
	if err != nil {
		return fmt.Errorf("failed to stat log file: %w", err)
	}
	r, err := os.Open(log)
	if err != nil {
		return fmt.Errorf("failed to open log %q: %w", log, err)
	}
	defer r.Close()
	tmpLog := log + tmpSuffix
	f, err := os.OpenFile(tmpLog, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, info.Mode())
	if err != nil {
		return fmt.Errorf("failed to create temporary log %q: %w", tmpLog, err)
	}
	defer os.Remove(tmpLog) // best effort; gone after the rename
	defer f.Close()
	w := gzip.NewWriter(f)
	_, err = io.Copy(w, r)
	if err == nil {
		err = w.Close()
	}
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		return fmt.Errorf("failed to compress %q to %q: %w", log, tmpLog, err)
	}
	compressedLog := log + compressSuffix
	if err := os.Rename(tmpLog, compressedLog); err != nil {
		return fmt.Errorf("failed to rename %q to %q: %w", tmpLog, compressedLog, err)
	}
	if err := os.Remove(log); err != nil {
		return fmt.Errorf("failed to remove log %q after compress: %w", log, err)
	}
	return nil
}

// rotateLatestLog renames the live log to <log>.<timestamp>, uncompressed
// so that the runtime can finish writing and a reader finish reading it,
// and has the runtime reopen the log. If the runtime cannot, the file is
// renamed back to be rotated next time, as the kubelet does.
//
// Unlike the kubelet, an existing <log>.<timestamp> (or .gz) is not
// overwritten: a second rotation within the same second (or after the
// clock went back) fails and the next pass rotates.
func (m *Manager) rotateLatestLog(ctx context.Context, id, log string) error {
	rotated := log + "." + m.cfg.Clock.Now().Format(TimestampLayout)
	for _, p := range []string{rotated, rotated + compressSuffix} {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("failed to rotate log %q to %q: %w", log, rotated, fs.ErrExist)
		}
	}
	if err := os.Rename(log, rotated); err != nil {
		return fmt.Errorf("failed to rotate log %q to %q: %w", log, rotated, err)
	}
	if err := m.cfg.Runtime.ReopenContainerLog(ctx, id); err != nil {
		// Renamed back to try again next pass. Should the agent stop
		// right here, the live log is the rotated file, as in the kubelet.
		if renameErr := os.Rename(rotated, log); renameErr != nil {
			m.cfg.Log.Error(renameErr, "Failed to rename rotated log", "rotatedLog", rotated, "newLog", log, "containerID", id)
		}
		return fmt.Errorf("failed to reopen container log %q: %w", id, err)
	}
	return nil
}
